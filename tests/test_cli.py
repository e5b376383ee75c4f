"""Success paths of the `tpubench` command and the absl mains, and the override parser they share.

Bad input is in test_bad_input.py; closed/open division in test_division.py.
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest
import runs

from tpubench import cli, entry, registry
from tpubench import config as config_lib

# ResNet's full (MLPerf) config shrunk to one synthetic step that reaches a 0.0 target.
SHRUNK_FULL = ("--config.data.source=synthetic", "--config.data.global_batch_size=4",
               "--config.eval.batch_size=4", "--config.eval.samples=4",
               "--config.eval.every_samples=4", "--config.run.max_train_samples=4",
               "--config.run.steps_per_dispatch=1", "--config.model.dtype=float32",
               "--config.data.image_size=32", "--config.model.stage_sizes=(1, 1, 1, 1)",
               "--config.model.num_filters=8", "--config.eval.target_value=0.0")


def _log_records(path: pathlib.Path) -> dict[str, list[dict]]:
    records: dict[str, list[dict]] = {}
    for line in path.read_text().splitlines():
        if ":::MLLOG " in line:
            r = json.loads(line.split(":::MLLOG ", 1)[1])
            records.setdefault(r["key"], []).append(r)
    return records


# ---- run ---------------------------------------------------------------------------------------
def test_run_success_prints_the_summary_and_exits_0(tmp_path):
    """`tpubench run` with no --workdir: the run reaches its (0.0) target, exit 0, and its end
    (tpubench/loops/ending.py) names the default workdir's summary.json and log. The overrides
    take the MLPerf config out of closed division, so it is filed under mini/, logged open, the
    note on stderr says why and the end says it is not a closed MLPerf result.
    Bites: division.apply not called by config.load (filed under mlperf/, logged closed; tried)."""
    proc = runs.tpubench("run", "resnet", "--config=full", f"--results_root={tmp_path}",
                         *SHRUNK_FULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    workdir = tmp_path / "mini" / "1xcpu" / "resnet" / "full" / "run_0"
    assert "tpubench: resnet/full ended: success (reached the target)" in proc.stdout
    assert f"  summary     {workdir / 'summary.json'}\n" in proc.stdout
    assert f"  MLPerf log  {workdir / 'mlperf_log.txt'}\n" in proc.stdout
    assert "NOT an MLPerf closed-division result: open division (" in proc.stdout
    summary = runs.summary(workdir)
    assert summary["status"] == "success" and summary["steps"] == 1
    assert summary["is_mlperf"] is False and summary["data_source"] == "synthetic"
    log = _log_records(workdir / "mlperf_log.txt")
    assert [r["value"] for r in log["submission_division"]] == ["open"]
    assert log["run_stop"][0]["metadata"]["status"] == "success"
    assert "open division" in proc.stderr and "data.source='synthetic'" in proc.stderr
    assert "eval.target_value=0.0" in proc.stderr


def test_absl_main_success_exits_0_with_a_summary(tmp_path):
    """`python -m workloads.resnet.main --config=smoke --config.eval.target_value=0.0`: success,
    exit 0, summary.json in the given workdir; the override reached the run.
    Bites: entry.main dropping the overrides (target 0.97 not reached: aborted, exit 1; tried)."""
    workdir = tmp_path / "w"
    proc = runs.python("-m", "workloads.resnet.main", "--config=smoke", f"--workdir={workdir}",
                       "--config.eval.target_value=0.0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = runs.summary(workdir)
    assert summary["status"] == "success" and summary["target"] == 0.0
    assert summary["config"] == "smoke" and summary["is_mlperf"] is False


def test_absl_main_help_exits_0_with_the_usage():
    """Bites: entry.main without its help branch (absl's help flag exits 1 mid-parse)."""
    proc = runs.python("-m", "workloads.dlrm.main", "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m workloads.dlrm.main --config=CONFIG")
    assert "--config.KEY=VALUE" in proc.stdout and proc.stderr == ""


# ---- list --------------------------------------------------------------------------------------
_LINE = re.compile(r"^  --config=(\S+)\s+(\S+)\s+target (.+?)  \[(.+)\]$")
_METRIC = re.compile(r"^(\S+) (>=|<=) (\S+)$")


def test_list_shows_every_workload_and_config_with_its_target(capsys):
    """Bites: _cmd_list printing the MLPerf kind from the wrong key (tried: `cfg.is_mlperf` ->
    `not cfg.is_mlperf`), or skipping a config; dropping the provisional-target note (tried)."""
    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed: dict[str, dict[str, tuple]] = {}
    needs: dict[tuple[str, str], str] = {}
    workload = last = None
    for line in lines:
        m = _LINE.match(line)
        if m:
            listed[workload][m.group(1)] = m.groups()[1:]
            last = m.group(1)
        elif line.strip().startswith("closed needs: "):
            needs[workload, last] = line.strip().removeprefix("closed needs: ")
        else:
            workload = line.split()[0]
            assert line == f"{workload}  (MLPerf: {registry.workload_class(workload).mlperf_name})"
            listed[workload] = {}
    assert sorted(listed) == registry.names() == [
        "bert", "deeplab", "dlrm", "gnmt", "maskrcnn", "minigo", "resnet", "rnnt", "ssd",
        "transformer", "unet3d"]
    for name in registry.names():
        assert sorted(listed[name]) == config_lib.config_names(name)
        for cfg_name, (dataset, target, kind) in listed[name].items():
            c = config_lib.load(name, cfg_name)
            several = dict(c.eval.get("target_values") or {})
            wanted = several or {c.eval.target_metric: c.eval.target_value}
            parts = [_METRIC.match(part).groups() for part in target.split(" and ")]
            assert dataset == c.data.dataset
            assert {metric: float(value) for metric, _, value in parts} == wanted
            assert {op for _, op, _ in parts} == {">=" if c.eval.higher_is_better else "<="}
            provisional = ("; target provisional: not reached by every measured run (its "
                           "docstring says which)")
            assert kind == (("MLPerf closed" if c.is_mlperf else "not MLPerf")
                            + (provisional if c.eval.target_provisional else ""))
    assert listed["resnet"]["full"][1] == "top1_accuracy >= 0.759"
    # A mini whose target some measured run missed says so (MiniGo's `mini`, not ResNet's).
    assert listed["minigo"]["mini"][2].endswith("target provisional: not reached by every "
                                                "measured run (its docstring says which)")
    assert listed["resnet"]["mini"][2] == "not MLPerf"
    # A several-metric target lists every threshold (Mask R-CNN: box AND mask AP).
    assert listed["maskrcnn"]["full"][1] == "BBOX >= 0.377 and SEGM >= 0.339"
    assert listed["bert"]["full"][1:] == ("masked_lm_accuracy >= 0.712", "MLPerf closed")
    # Issue 34: each closed config says what a closed run needs (weights, data), none other.
    closed = {(w, n) for w in registry.names() for n in config_lib.config_names(w)
              if config_lib.load(w, n).is_mlperf}
    assert set(needs) == closed and all(needs.values())
    assert "R-50.pkl" in needs["maskrcnn", "full"] and "ResNet-34" in needs["ssd", "full"]
    assert "terabyte_processed_" in needs["dlrm", "full"]
    assert "not runnable closed yet" in needs["minigo", "full"]


def test_list_imports_no_model_framework():
    """`tpubench list` (and --variants) stays fast (issue 33.7: 9-17 s when it imported every
    workload): no JAX, Flax, Optax or TensorFlow in sys.modules afterwards (a fresh process).
    Bites: _cmd_list reading `registry.workload_class(name).mlperf_name` again, or a config
    importing MOBILEBERT_OPT from the model module (both tried)."""
    code = ("import sys\nfrom tpubench import cli\n"
            "assert cli.main(['list']) == 0 and cli.main(['list', '--variants']) == 0\n"
            "heavy = ('jax', 'flax', 'optax', 'tensorflow', 'orbax', 'torch')\n"
            "print('HEAVY', sorted(m for m in heavy if m in sys.modules))\n")
    proc = runs.python("-c", code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == "HEAVY []", proc.stdout[-500:]


# ---- help ---------------------------------------------------------------------------------------
def _main(capsys, *argv: str) -> tuple[int, str, str]:
    """cli.main in this process; argparse's own --help ends in SystemExit(0): its code."""
    try:
        code = cli.main(list(argv))
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


# Each command's --help: the words it must show (flags, examples) besides "usage:".
HELP_SHOWS = {
    (): ("Commands:", "  run ", "  infer ", "  launch ", "Examples:", "tpubench list"),
    ("run",): ("--config=CONFIG", "--workdir=DIR", "--results_root=DIR", "(default: results)",
               "--runs=N", "--config.SECTION.KEY=VALUE", "Examples:",
               "tpubench run resnet --config=mini"),
    ("list",): ("--variants", "Examples:"),
    ("check",): ("--ruleset", "(default: 0.7.0)", "--usage", "Examples:"),
    ("report",): ("--out", "--compare"),
    ("infer",): ("--scenario", "--workdir", "--results_root", "(default: performance)",
                 "Examples:", "tpubench infer resnet --config=mini --scenario=Offline"),
    ("fit",): ("--topology", "--json", "Examples:", "--topology=v5p:2x2x2"),
    ("prepare",): ("--config", "Examples:", "tpubench prepare transformer --config=mini"),
    ("package",): ("--system", "--system-template", "Examples:",
                   "tpubench package submission --system=my_system.json"),
    ("launch",): ("local", "tpu-vm", "slurm", "multinode", "Examples:"),
    ("launch", "local"): ("--processes", "(default: 30)", "Examples:"),
    ("launch", "tpu-vm"): ("create", "delete", "Examples:", "tpubench launch tpu-vm all"),
    ("launch", "slurm"): ("--nodes", "(default: 8)", "Examples:", "tpubench launch slurm"),
    ("launch", "multinode"): ("--hosts", "(default: 12355)", "Examples:"),
}
TAKES_A_WORKLOAD = {(), ("run",), ("infer",), ("fit",), ("prepare",)}


@pytest.mark.parametrize("command", sorted(HELP_SHOWS), ids=lambda c: " ".join(c) or "tpubench")
def test_help_of_every_command_exits_0_with_flags_workloads_and_an_example(command, capsys):
    """Issue 33.5: `tpubench --help` and every subcommand's: exit 0, usage, its flags with
    defaults, the workloads (from the registry; infer: the served ones) and an example; the
    top-level help names no module. Bites: main printing cli's module docstring again (module
    names, no workloads); `launch --help` refused as an unknown launcher (exit 2); launch
    local checking for `--` before parsing --help (exit 2): each tried."""
    code, out, err = _main(capsys, *command, "--help")
    assert code == 0 and err == "", err
    assert out.startswith("usage: "), out[:200]
    for words in HELP_SHOWS[command]:
        assert words in out, (words, out)
    if command in TAKES_A_WORKLOAD:
        names = registry.served() if command == ("infer",) else registry.names()
        listed = re.search(r"^Workloads[^:]*: (.*?)\.", out, re.M | re.S).group(1)
        assert [n for n in registry.names() if re.search(rf"\b{n}\b", listed)] == names, out
    if command == ():
        assert "tpubench." not in out and ".py" not in out, out  # no module names
    if command[:1] == ("launch",) and len(command) == 2:
        assert out.startswith(f"usage: tpubench launch {command[1]} "), out[:100]


def test_absl_main_help_lists_its_configs_and_the_workloads(capsys):
    """`python -m workloads.<name>.main --help` (entry.main): flags, this workload's configs,
    the workloads, an example. Bites: entry.main printing the old HELP (no configs, no
    workloads, no example; tried)."""
    assert entry.main("gnmt", ["--help"]) == 0
    out = capsys.readouterr().out
    for words in ("--config=CONFIG", "--workdir=DIR", "--config.SECTION.KEY=VALUE",
                  "Configs of gnmt: full, mini, smoke.", "Workloads: bert, deeplab",
                  "python -m workloads.gnmt.main --config=mini --workdir="):
        assert words in out, (words, out)


# ---- infer's default directory -------------------------------------------------------------------
def test_infer_without_workdir_takes_the_next_free_run_dir_beside_training_runs(tmp_path):
    """`tpubench infer` without --workdir: `tpubench run`'s rule, the next free run_<i>, in
    RESULTS_ROOT/infer/<platform>/WORKLOAD/CONFIG/<Scenario>_<mode>/ (never in the training
    runs' tree, whose summary.json files `tpubench report` scores).
    Bites: default_workdir not skipping a taken run_<i> (returns run_0 again; tried)."""
    from tpubench.infer import cli as infer_cli

    args = infer_cli._parser().parse_args(["resnet", "--config=smoke", "--scenario=Offline",
                                           f"--results_root={tmp_path}"])
    assert args.workdir is None
    infer_cli.check_args(args)  # parses the scenario; an absent --workdir is no error
    cfg = config_lib.load("resnet", "smoke")
    base = tmp_path / "infer" / "1xcpu" / "resnet" / "smoke" / "Offline_performance"
    assert infer_cli.default_workdir(args, cfg) == base / "run_0"
    (base / "run_0").mkdir(parents=True)
    assert infer_cli.default_workdir(args, cfg) == base / "run_1"


def test_prepare_says_when_a_config_has_nothing_to_prepare(capsys):
    """`tpubench prepare` prints where the data is, or that there is none to prepare (the
    Transformer smoke reads synthetic data); the JSON line names the directory (None here).
    Bites: prepare printing only {"prepared": true} (tried)."""
    assert cli.main(["prepare", "transformer", "--config=smoke"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("tpubench prepare: transformer smoke (data.source=synthetic) has nothing "
                        "to prepare; its runs read the data as they are.")
    assert json.loads(lines[-1]) == {"workload": "transformer", "config": "smoke",
                                     "prepared": True, "directory": None}


# ---- third-party noise -------------------------------------------------------------------------
def test_compile_only_tpu_devices_print_no_libtpu_metadata_trace(libtpu):
    """Off Cloud TPU, libtpu asks the metadata server for the slice and the workers and prints
    a warning plus an `INVALID_ARGUMENT: unexpected worker hostname` trace (issue 33, on
    `tpubench fit`); topology.quiet_libtpu_off_tpu tells it both first. A fresh process
    (libtpu reads them once). Bites: _tpu_devices without quiet_libtpu_off_tpu (tried)."""
    code = ("from tpubench.platform import topology\n"
            "print(len(topology.parse('v5p:2x2x1').devices()))\n")
    env = {k: v for k, v in runs.env().items()
           if k not in ("TPU_ACCELERATOR_TYPE", "TPU_WORKER_HOSTNAMES")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=runs.REPO, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["4"]
    for noise in ("INVALID_ARGUMENT", "could not determine TPU", "Source Location Trace"):
        assert noise not in proc.stderr, proc.stderr[-2000:]


def test_infer_params_restores_without_orbax_metadata_warning(tmp_path, caplog):
    """`infer --params=RUN` restores the run's checkpoint without orbax's "Metadata file does
    not exist" warning (issue 33). Bites: _variables without _without_orbax_metadata_warning
    (the warning is logged; tried)."""
    import logging

    import flax.linen as nn
    import jax

    from tpubench.infer import cli as infer_cli
    from tpubench.loops import checkpoint, steps
    from tpubench.loops.progress import Progress

    workload = registry.create(config_lib.load("resnet", "smoke"))
    # A run's checkpoint as the loop saves it (real orbax), of the initial state: no training.
    state = nn.meta.unbox(jax.jit(steps.boxed_init_fn(workload))(jax.random.PRNGKey(0)))
    with checkpoint.manager(tmp_path / "run") as mgr:
        checkpoint.save(mgr, 1, state, Progress())
    with caplog.at_level(logging.INFO):
        _, _, source = infer_cli._variables(workload, str(tmp_path / "run"))
    assert source == f"checkpoint:{tmp_path / 'run'}"
    logged = [r.getMessage() for r in caplog.records]
    assert not [m for m in logged if "Metadata file does not exist" in m], logged


# ---- check -------------------------------------------------------------------------------------
def _google_resnet_log(shared_data_dir) -> pathlib.Path:
    return (shared_data_dir / "mlperf_v07_results" / "Google" / "results" / "tpu-v3-8192-JAX"
            / "resnet" / "result_0.txt")


def test_check_valid_on_a_real_log(shared_data_dir, capsys):
    """Google's published v0.7 JAX ResNet log passes the official 0.7.0 checker.
    Bites: _cmd_check reading the verdict inverted (tried: `not result.valid`)."""
    assert cli.main(["check", str(_google_resnet_log(shared_data_dir))]) == 0
    out = capsys.readouterr().out
    assert "training_0.7.0/closed_resnet_lars.yaml" in out
    assert out.splitlines()[-1] == "VALID"


def test_check_invalid_names_the_failing_rule(shared_data_dir, tmp_path, capsys):
    """The same log with LARS's poly power changed to 3 (the rules fix it to 2): INVALID, exit 1,
    and the output names the key and the rule it broke.
    Bites: _cmd_check printing VALID and returning 0 regardless of the verdict (tried)."""
    broken = tmp_path / "result_0.txt"
    text = _google_resnet_log(shared_data_dir).read_text()
    key = '"key": "lars_opt_learning_rate_decay_poly_power", "value": 2,'
    assert text.count(key) == 1
    broken.write_text(text.replace(key, key.replace("2,", "3,")))
    assert cli.main(["check", str(broken)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "INVALID"
    assert "lars_opt_learning_rate_decay_poly_power" in out and "v['value'] == 2" in out


# ---- the one override parser -------------------------------------------------------------------
@pytest.mark.parametrize(("override", "key", "expected"), [
    (["--config.data.global_batch_size=64"], "data.global_batch_size", 64),
    (["--config.data.global_batch_size", "64"], "data.global_batch_size", 64),  # next word
    (["--config.run.max_time_s=5"], "run.max_time_s", 5.0),  # an int for a float key: a float
    (["--config.run.max_time_s=2.5"], "run.max_time_s", 2.5),
    (["--config.eval.higher_is_better=False"], "eval.higher_is_better", False),
    (["--config.eval.higher_is_better=false"], "eval.higher_is_better", False),
    (["--config.eval.higher_is_better=0"], "eval.higher_is_better", False),
    (["--noconfig.eval.higher_is_better"], "eval.higher_is_better", False),
    (["--config.eval.higher_is_better=TRUE"], "eval.higher_is_better", True),
    (["--config.eval.higher_is_better=1"], "eval.higher_is_better", True),
    (["--config.model.dtype=bfloat16"], "model.dtype", "bfloat16"),
    (["--config.data.dataset=123"], "data.dataset", "123"),  # a str key keeps the text
    (["--config.model.stage_sizes=(2, 2, 2)"], "model.stage_sizes", (2, 2, 2)),
    (["--config.model.stage_sizes=[2,2]"], "model.stage_sizes", (2, 2)),  # a list for a tuple
    (["--config.model.stage_sizes=3"], "model.stage_sizes", (3,)),  # config_flags: one element
    (["--config.model.stage_sizes", "1", "--config.model.stage_sizes", "2"],
     "model.stage_sizes", (1, 2)),  # a repeated tuple flag collects its values
    (["--config.run.mesh.data=2"], "run.mesh.data", 2),
    (["--config.optimizer.learning_rate=1e-3"], "optimizer.learning_rate", 0.001),
])
def test_override_values_parse_to_the_configs_type(override, key, expected):
    """What `tpubench run`, the absl mains and `config.load` make of each spelling
    (ml_collections.config_flags rules).
    Bites: DEFINE_config_dict given sys_argv=["tpubench"] instead of the words (tried: it then
    defines no override flags and absl refuses every one as unknown)."""
    c = config_lib.load("resnet", "mini", override)
    node = c
    for part in key.split("."):
        node = node[part]
    assert node == expected and type(node) is type(expected)


@pytest.mark.parametrize("override", [
    "data.global_batch_size=1.5", "data.global_batch_size=True", "run.seed=yes",
    "run.max_time_s=fast", "eval.higher_is_better=maybe", "eval.higher_is_better=2",
    "run.mesh={'data': 2}", "run.mesh=3", "model.stage_sizes=oops",
])
def test_override_values_of_the_wrong_type_are_refused(override):
    """Bites: _check_tuple not called (tried: stage_sizes=oops became ('oops',))."""
    with pytest.raises(config_lib.UsageError, match=re.escape(override.split("=")[0])):
        config_lib.load("resnet", "mini", [f"--config.{override}"])


@pytest.fixture
def none_field_config(tmp_path):
    path = tmp_path / "with_none.py"
    path.write_text("from workloads.resnet.configs import smoke\n\n\ndef get_config():\n"
                    "    c = smoke.get_config()\n    c.model.extra = None\n    return c\n")
    return str(path)


SAME_ARGV = [
    ["--config.run.seed", "3"],  # space-separated value
    ["--config.run.seed=3", "--config.model.dtype", "bfloat16"],
    ["--config.model.stage_sizes=(2, 1, 1)"],  # tuples
    ["--config.model.stage_sizes", "2", "--config.model.stage_sizes", "1"],
    ["--config.eval.higher_is_better=false"],  # bools
    ["--noconfig.eval.higher_is_better"],
    ["--config.run.clear_page_cache", "--config.run.seed=1"],
    ["--config.model.extra=5"],  # a None field: config_flags cannot type it
    ["--config.batch_size=64"],  # an unknown key
    ["--config.run.nope=1"],
    ["--config.run.mesh=3"],  # a section given a value
    ["--config.run.seed=x"],
    ["--config.run.seed"],  # no value
    ["--config.submission.open_reasons=x"],
    ["--config.is_mlperf=true"],
]


@pytest.mark.parametrize("words", SAME_ARGV, ids=lambda w: " ".join(w))
def test_the_same_words_give_the_same_config_through_both_entry_points(words, none_field_config):
    """`tpubench run` (its own FlagValues) and the absl mains parse the same words into the same
    config, or refuse them with the same message.
    Bites: cli.parse_run dropping the value words of "--config.KEY VALUE" before parsing, as the
    old split_args did (tried: three of these cases then differ)."""
    def outcome(parse):
        try:
            return ("ok", parse().to_dict())
        except config_lib.UsageError as e:
            return ("error", str(e).split(" Usage:")[0])

    cfg_arg, workdir = f"--config={none_field_config}", "--workdir=w"
    by_main = outcome(lambda: entry.parse("resnet", [cfg_arg, workdir, *words])[0])
    by_run = outcome(lambda: cli.parse_run(["resnet", cfg_arg, workdir, *words])[0])
    assert by_main == by_run
    if by_main[0] == "error":
        assert by_main[1]  # a message, not an empty one
    else:
        assert by_main[1] != config_lib.load("resnet", none_field_config).to_dict()


def test_refusals_name_the_fix():
    """Unknown keys list the known ones and point at the renamed key; a section lists its keys.
    Bites: check_key skipped before parsing (tried: config_flags' own AttributeError escapes)."""
    with pytest.raises(config_lib.UsageError) as e:
        config_lib.load("resnet", "mini", ["--config.batch_size=64"])
    assert "Did you mean --config.eval.batch_size?" in str(e.value)
    assert "Known keys in the top level: config_name, data, eval" in str(e.value)
    with pytest.raises(config_lib.UsageError) as e:
        config_lib.load("resnet", "mini", ["--config.run.nope=1"])
    assert "Known keys in run: checkpoint_every_evals, checkpoint_keep" in str(e.value)
    with pytest.raises(config_lib.UsageError, match=r"--config\.run\.mesh\.data=\.\.\."):
        config_lib.load("resnet", "mini", ["--config.run.mesh=3"])
    with pytest.raises(config_lib.UsageError, match="comes before --config"):
        entry.parse("resnet", ["--config.run.seed=1", "--config=mini", "--workdir=w"])


@pytest.mark.parametrize("words", [w for w in SAME_ARGV if "--config.run.seed" != w[-1]],
                         ids=lambda w: " ".join(w))
def test_fit_prepare_and_infer_pass_the_same_override_words_as_run(words, none_field_config):
    """`tpubench fit`, `prepare` and `infer` parse their own flags with argparse and hand the
    override words to `config.load` (`config.split_overrides`): the space form's value word goes
    with its flag, other words stay theirs. Bites: keeping only the words that start with
    "--config." (the old filter: `--config.run.seed 3` then lost its 3 and became a refusal)."""
    own = ["infer-or-fit-word", "--scenario", "Offline"]
    overrides, rest = config_lib.split_overrides([own[0], *words, *own[1:]])
    assert rest == own
    assert overrides == words

    def outcome(parse):
        try:
            return ("ok", parse().to_dict())
        except config_lib.UsageError as e:
            return ("error", str(e).split(" Usage:")[0])

    by_run = outcome(lambda: cli.parse_run(["resnet", f"--config={none_field_config}",
                                            "--workdir=w", *words])[0])
    by_load = outcome(lambda: config_lib.load("resnet", none_field_config, overrides))
    assert by_load == by_run

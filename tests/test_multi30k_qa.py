"""The cross-lingual Multi30k questions (`workloads/bert/multi30k_qa.py`, config
`squad_mini_multi30k`): the records are well formed, the baselines are the config docstring's,
and LoadGen's accuracy mode reproduces the training eval's F1."""

from __future__ import annotations

import collections
import importlib.util
import json

import pytest
import runs

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops import supervised as train
from workloads.bert import multi30k_qa
from workloads.bert.configs import squad_mini_multi30k


def test_each_question_is_the_german_of_its_answer_caption_once_in_the_context(
        shared_data_dir):
    """The 1,000 eval questions (seed 1, 4 captions): the answer span at `answer_starts` is
    the answer caption, whose Multi30k German line is the question; the 4 captions are
    distinct test captions; every test sentence is asked once; the answer's position is
    spread over the 4 slots. Bites (tried): the distractor draw not skipping the asked
    sentence (`+ (j >= i)` dropped: 4 contexts hold the answer twice)."""
    data = multi30k_qa.pairs(str(shared_data_dir), "eval")
    german = dict(data)
    records = multi30k_qa.records(str(shared_data_dir), "eval", 1000, 1, 4)
    assert len(records) == 1000 and len({r["question"] for r in records}) == 1000
    english = {en for en, _ in data}
    for r in records:
        answer, start = r["answers"][0], r["answer_starts"][0]
        assert r["context"][start:start + len(answer)] == answer
        assert german[answer] == r["question"]
        assert r["candidates"][r["target"]] == answer
        assert len(set(r["candidates"])) == 4 and set(r["candidates"]) <= english
        assert r["context"] == " ".join(r["candidates"])
    slots = collections.Counter(r["target"] for r in records)
    assert sorted(slots) == [0, 1, 2, 3] and min(slots.values()) > 200



def test_missing_multi30k_is_a_usage_error_before_compute(tmp_path):
    """squad_mini_multi30k with data.dir = an empty directory: `train_and_evaluate` stops with
    a UsageError naming the download command, nothing written to the run's workdir. Bites
    (tried): the source's check not wired (`_check_multi30k_qa` -> the Shakespeare one: a
    FileNotFoundError from gzip instead)."""
    from tpubench.errors import UsageError

    cfg = config_lib.load("bert", "squad_mini_multi30k", {"data.dir": str(tmp_path)})
    with pytest.raises(UsageError, match="download_multi30k"):
        train.train_and_evaluate(cfg, tmp_path / "run")
    assert not (tmp_path / "run" / "mlperf_log.txt").exists()

@pytest.mark.slow
def test_baselines_are_the_config_docstrings(shared_data_dir):
    """The figures in `squad_mini_multi30k`'s docstring, from
    `baselines/bert.py multi30k_qa` on the config's eval questions, and the target above
    every baseline but the learned lexicon. Bites (tried): the char 3-gram baseline on text
    not lower-cased (F1 76.62, not 83.47)."""
    path = runs.REPO / "baselines" / "bert.py"
    spec = importlib.util.spec_from_file_location("baselines_bert", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    records = multi30k_qa.records(str(shared_data_dir), "eval", 1000, 1, 4)
    scores = module.multi30k_qa_scores(str(shared_data_dir), records)
    got = {k: round(v["f1"], 2) for k, v in scores.items()}
    assert got == {"first caption": 29.28, "last caption": 31.62, "longest caption": 31.57,
                   "shortest caption": 29.01, "length match": 59.24, "word overlap": 51.17,
                   "char 3-gram overlap": 83.47, "length + 3-grams": 72.80,
                   "learned lexicon (Dice)": 97.96}
    target = config_lib.load("bert", "squad_mini_multi30k").eval.target_value
    assert max(got, key=got.get) == "learned lexicon (Dice)"
    del got["learned lexicon (Dice)"]  # learned from the training pairs, as the model is
    assert target > max(got.values())


SMALL = {"data.train_questions": 64, "data.eval_questions": 40, "run.max_train_samples": 64,
         "eval.every_samples": 64, "run.steps_per_dispatch": 1}


@pytest.mark.slow
def test_accuracy_mode_reproduces_the_training_eval(shared_data_dir, tmp_path):
    """squad_mini_multi30k cut down (64 train questions, 2 steps, 40 eval questions), then
    `tpubench infer bert` Offline accuracy mode on its checkpoint with the same overrides: the
    F1 from LoadGen's accuracy log equals the training eval's. Bites (tried): another
    eval seed in the inference run (--config.data.eval_questions_seed=2: F1 18.31 against the
    training eval's 16.11)."""
    from tpubench.infer import cli

    words = [f"--config.{k}={v}" for k, v in
             {**SMALL, "data.dir": str(shared_data_dir)}.items()]
    trained = train.train_and_evaluate(
        config_lib.load("bert", "squad_mini_multi30k", words), tmp_path / "run")
    assert trained["steps"] == 2 and len(trained["quality_history"]) == 1
    rc = cli.main(["bert", "--config=squad_mini_multi30k", *words, "--scenario=Offline",
                   "--mode=accuracy", "--batch-sizes=64", f"--params={tmp_path / 'run'}",
                   f"--workdir={tmp_path / 'infer'}"])
    summary = json.loads((tmp_path / "infer" / "summary.json").read_text())
    assert rc == 0 and summary["accuracy"] == trained["final_quality"]
    assert summary["benchmark"] == "bert-99 (NOT AN MLPERF RESULT)"


# Seeds 0, 1, 2 (harness runs, 2026-12-03, the config's docstring: lr 1e-3 decaying to the floor
# 3e-4 at step 4,000, then held; seed 1 passes 85.0 at step 6,000 (84.88 at 5,500, 85.79 at 6,000,
# then 85.60 86.45 at the budget's two evals of slack, 6,500 and 7,000); with the decay to zero at
# step 4,000 (the config until 2026-12-02) it ended at 76.40 and seeds 0 and 2 passed at step
# 3,500. A BERT mini pre-training run (1,500 steps) and the fine-tuning to the measured step take
# about an hour on the loaded 2-core machine.
MINI_TARGET_STEP = {0: 5000, 1: 6000, 2: 3000}


def test_mini_schedule_holds_its_floor_and_mobilebert_keeps_the_decay_to_zero():
    """squad_mini_multi30k: lr 1e-3, linear to the floor 3e-4 at step 4,000, held to the end of
    the run (step 7,000); mobilebert_squad_mini (which starts from its config) keeps the schedule
    it was measured with, the decay to 0 at step 4,000. Bites: the floor dropped (0 at step
    4,000), or mobilebert_squad_mini inheriting it (3e-4 at step 4,000)."""
    def rates(name):
        w = registry.create(config_lib.load("bert", name))
        return ([float(w.learning_rate(s)) for s in (2000, 4000, 6000)],
                w.config.run.max_train_samples // w.config.data.global_batch_size)

    assert rates("squad_mini_multi30k") == (pytest.approx([6.5e-4, 3e-4, 3e-4], rel=1e-5), 7000)
    assert rates("mobilebert_squad_mini") == (pytest.approx([5e-4, 0.0, 0.0], abs=1e-9), 4000)


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.parametrize("seed", sorted(MINI_TARGET_STEP))
def test_mini_reaches_its_target_at_the_measured_step(shared_data_dir, tmp_path, seed):
    """Step budget, not wall clock: fine-tuned from a BERT mini pre-training run (seed 0, as
    the docstring's PRE), squad_mini_multi30k reaches its target (above every rule baseline)
    at the measured eval, give or take one eval (500 steps). Bites (measured as harness runs,
    not through pytest): the schedule cut short (lr 5e-4 over 1,500 steps ends at F1 51.94;
    lr 1e-3 over 3,000 steps at 82.67, both below the target; seed 1 with the decay to zero at
    step 4,000: 76.40)."""
    pre = runs.train_bert_mini(tmp_path / "pre", seed=0)
    assert pre["status"] == "success"
    want = MINI_TARGET_STEP[seed]
    cfg = config_lib.load("bert", "squad_mini_multi30k", {
        "run.seed": seed, "model.init_params": str(tmp_path / "pre"),
        "data.dir": str(shared_data_dir),
        "run.max_train_samples": min(want + 500, squad_mini_multi30k.STEPS) * 32})
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "success", s["quality_history"]
    assert abs(s["steps"] - want) <= 500, (s["steps"], s["quality_history"])
    assert s["final_quality"] >= cfg.eval.target_value

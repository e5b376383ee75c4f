"""Mini: a narrow MobileBERT fine-tuned on the cross-lingual Multi30k extractive questions.

    tpubench run bert --config=mobilebert_squad_mini --workdir=DIR     # from random init
    tpubench infer bert --config=mobilebert_squad_mini --scenario=SingleStream --mode=accuracy \\
        --params=DIR --workdir=INFER_DIR                     # served as MLPerf Mobile mobilebert
Distilled from a fine-tuned BERT mini (`model.distill`, `workloads/bert/distill.py`), in order:
    tpubench run bert --config=mini --workdir=PRE                   # 1. pre-train the BERT mini
    tpubench run bert --config=squad_mini_multi30k --config.model.init_params=PRE \\
        --config.run.seed=2 --config.eval.target_value=101 --workdir=TEACHER   # 2. the teacher
    tpubench run bert --config=mobilebert_squad_mini \\
        --config.model.distill.teacher=TEACHER --workdir=DIR       # 3. the student, distilled
(step 2 is the teacher measured below, with squad_mini_multi30k's schedule of 2026-12-02e:
lr 1e-3, 4,000 steps.) The teacher's frozen params ride in the student run's model state;
the serving command above is unchanged: it takes the student alone (no teacher needed).

Data and eval are `squad_mini_multi30k`'s (this config starts from its `get_config()`, so a
change to that mini's data carries over; see it for the data and the baselines); its schedule
(lr 1e-3, 4,000 steps, warmup 400, batch 32, eval every 500 steps) is pinned here. Only the
encoder differs: MobileBERT's architecture (trigram embedding, bottlenecks, NoNorm, relu,
stacked FFNs) at 2 blocks, inter-block width 128 (as the BERT mini's hidden size), bottleneck
32, embedding 32, 2 heads, 2 stacked FFNs of 128, from random init. Target and its status:
`squad_mini_multi30k`'s (85.0 F1, above its strongest rule baseline, char 3-gram overlap 83.47;
the learned lexicon 97.96), PROVISIONAL: no MobileBERT run has reached it, nor the 83.47
baseline (best measured: 76.63, distilled with 4 blocks, below).

Measured (seed 0; `tpubench run bert --config=mobilebert_squad_mini
--config.eval.target_value=101 --workdir=DIR` plus the overrides named; official F1 of the
1,000 eval questions at steps 500, 1,000, ...). 2026-12-02e:
  this config (random init, lr 1e-3, 4,000 steps):
      35.16 34.51 33.59 58.12 65.68 71.88 70.22 72.11
  lr 2e-3 over 8,000 steps (--config.optimizer.learning_rate=2e-3
  --config.schedule.train_steps=8000 --config.schedule.warmup_steps=800
  --config.run.max_train_samples=256000), stopped at step 4,500 for time:
      35.25 34.41 35.75 35.53 43.47 60.88 70.67 71.36 71.63
  from MobileBERT pre-training (--config.model.init_params=PRE, PRE a `bert
  --config=mobilebert_mini` run, seed 0, 2,000 steps, masked-LM accuracy 0.1691; the BERT
  mini's target 0.192 not reached), stopped at step 2,500 (no rise yet):
      36.27 34.15 32.51 35.65 34.38
  twice as wide (--config.model.hidden_size=256 --config.model.intra_bottleneck_size=64
  --config.model.embedding_size=64 --config.model.intermediate_size=256):
      35.08 36.08 34.66 55.88 65.12 70.91 73.44 74.33
2026-12-02f, distilled (--config.model.distill.teacher=TEACHER, TEACHER = /tmp/qa_runs/ft_s2,
the `squad_mini_multi30k` run of step 2 above, seed 2, F1 86.89 at step 4,000; this config's
temperature 2.0 and alpha 0.5):
  distilled, 2 blocks (this config + the teacher):
      50.37 57.93 63.76 67.78 70.08 72.74 73.99 73.54
  distilled, 4 blocks (--config.model.num_hidden_layers=4):
      36.38 35.59 68.19 69.66 72.51 75.19 75.85 76.36
  distilled, 4 blocks, 8,000 steps (--config.model.num_hidden_layers=4
  --config.schedule.train_steps=8000 --config.schedule.warmup_steps=800
  --config.run.max_train_samples=256000):
      36.27 55.42 67.19 68.12 67.79 72.49 75.04 74.33 76.10 76.43 74.96 76.17 76.23 76.63
      76.37 76.18
Without a teacher the F1 sits near 35 (between the first-caption baseline 29.28 and length
match 59.24) until step ~1,500, climbs as the BERT mini's does, then levels off near 72. The
levers, at step 4,000 against this config's 72.11: distillation +1.43 (73.54; it removes the
plateau near 35: 50.37 at step 500, 63.76 at step 1,500), distillation with 4 blocks +4.24
(76.36), with 4 blocks over 8,000 steps +4.07 at step 8,000 (76.18; 76.63 at most, from
step 4,500 on within 74.96-76.63: twice the steps buy nothing); twice the width (no teacher)
+2.22; a higher rate over a longer schedule, or the Shakespeare pre-training: no gain. Every
curve levels off, 7-11 F1 under the char 3-gram rule (83.47) and the teacher (86.89): the
student's size, not its training signal or length, looks like the limit. Open: other
temperature / alpha values (only T 2.0, alpha 0.5 measured), a wider embedding (32 here, the
teacher's 128) with the teacher, more seeds.
Served (this config's seed-0 checkpoint, no teacher, step 4,000): `tpubench infer ...
--scenario=SingleStream --mode=accuracy` F1 72.10802758897114 over the 1,000 questions, equal
to the run's last eval (LoadGen VALID; tests/test_mobilebert.py checks the equality on a
cut-down run; tests/test_squad_workload.py that a distilled run's student restores and
evaluates without its teacher); with `--quantize=int8 --calibration_samples=256` (int8
weights and activations, max calibration, 24 kernels; parameter bytes 691,600 against
939,016) F1 70.69262 against the float 72.10803 (the 93% bar of the mobile suite, 67.06, met
by both).
Cost: this config's 4,000 steps took 573 s of training and 42 s of evals (223 examples/s)
after 42 s of init and ~3 minutes of question conversion, at load average 10-17 on the shared
2-core machine (not a speed figure); the wide model's took 1,157 s (111 examples/s).
Distilled (the teacher's forward pass in every step), at load average 7-11: 2 blocks 811 s
from run start to the last eval, 4 blocks 1,067 s, 4 blocks over 8,000 steps 1,992 s.
"""

from workloads.bert.configs import squad_mini_multi30k
from workloads.bert.configs._mobilebert import MINI_SIZES, use_mobilebert

STEPS = 4000
BATCH = 32


def get_config():
    """The MobileBERT SQuAD mini config."""
    c = squad_mini_multi30k.get_config()
    vocab, positions = int(c.model.vocab_size), int(c.model.max_position_embeddings)
    c = use_mobilebert(c, vocab_size=vocab, max_position_embeddings=positions, **MINI_SIZES)
    c.config_name = "mobilebert_squad_mini"
    c.model.init_params = ""  # random init (a `mobilebert_mini` run's workdir: see above)
    # The schedule, pinned here (measured with these; squad_mini_multi30k's may change).
    c.optimizer.learning_rate = 1e-3
    c.schedule.train_steps = STEPS
    c.schedule.warmup_steps = STEPS // 10
    c.schedule.end_learning_rate = 0.0
    c.run.max_train_samples = STEPS * BATCH
    c.data.global_batch_size = BATCH
    c.eval.every_samples = 500 * BATCH
    # Distillation (workloads/bert/distill.py) when --config.model.distill.teacher is given.
    c.model.distill.temperature = 2.0
    c.model.distill.alpha = 0.5
    c.eval.target_provisional = True  # no MobileBERT run has reached it (set here, not inherited)
    return c

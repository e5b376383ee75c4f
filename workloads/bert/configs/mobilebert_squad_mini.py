"""Mini: a narrow MobileBERT distilled from the fine-tuned BERT mini on the cross-lingual
Multi30k extractive questions, with MobileBERT's layer-wise knowledge transfer.

In order (the teacher, then the student; `model.distill`, `workloads/bert/distill.py` and
`workloads/bert/layer_transfer.py`):
    tpubench run bert --config=mini --workdir=PRE                   # 1. pre-train the BERT mini
    tpubench run bert --config=squad_mini_multi30k --config.model.init_params=PRE \\
        --config.run.seed=2 --config.eval.target_value=101 --workdir=TEACHER \\
        --config.schedule.end_learning_rate=0 --config.run.max_train_samples=128000  # 2. teacher
    tpubench run bert --config=mobilebert_squad_mini \\
        --config.model.distill.teacher=TEACHER --workdir=DIR       # 3. the student
    tpubench infer bert --config=mobilebert_squad_mini --scenario=SingleStream --mode=accuracy \\
        --params=DIR --workdir=INFER_DIR                     # served as MLPerf Mobile mobilebert
(step 1 stops at the BERT mini's target, step 1,500; step 2 is the teacher measured below,
TEACHER = /tmp/qa_runs/ft_s2: seed 2, squad_mini_multi30k's schedule of 2026-12-02e, lr 1e-3,
4,000 steps, F1 86.89; that config's own docstring has its curve; the two overrides give that
schedule back: since 2026-12-03 squad_mini_multi30k holds a floor of 3e-4 to step 6,000.)
The teacher's frozen params ride in the student run's model state, its forward pass in the same
jitted step; serving takes the student alone. Without `--config.model.distill.teacher` step 3
trains from random init (the distillation keys are then unused; measured only at embedding 32,
below). `model.init_params`
from a `mobilebert_mini` pre-training run needs `--config.model.embedding_size=32` (its width).

Data and eval are `squad_mini_multi30k`'s (this config starts from its `get_config()`, so a
change to that mini's data carries over; see it for the data and the baselines); its schedule
(lr 1e-3, 4,000 steps, warmup 400, batch 32, eval every 500 steps) is pinned here. Only the
encoder differs: MobileBERT's architecture (trigram embedding, bottlenecks, NoNorm, relu,
stacked FFNs) at 2 blocks, inter-block width 128 (as the BERT mini's hidden size), bottleneck
32, embedding 128 (32 until 2026-12-03), 2 heads, 2 stacked FFNs of 128. Distillation, pinned:
the logits at temperature 2.0, alpha 0.5 (distill.py), plus feature-map transfer (weight 1.0:
mean squared error between each block's output and the teacher layer's, both 128 wide, no
projection) and attention transfer (weight 1.0: KL from the teacher's to the student's per-head
attention rows), the MobileBERT paper's §3.3-3.4 (layer_transfer.py). Layer map: the teacher
(workloads/bert/configs/mini.py: 2 layers, hidden 128, 2 heads) has the student's depth, so
block i takes layer i, as in the paper (no stride needed). Target: `squad_mini_multi30k`'s
85.0 F1 (its strongest rule baseline, char 3-gram overlap, is 83.47; the learned lexicon
97.96), no longer provisional: reached by seeds 0 and 1 (below), first at step 2,500 (seed 0)
and 2,000 (seed 1).

Measured 2026-12-03 (`tpubench run bert --config=mobilebert_squad_mini
--config.model.distill.teacher=/tmp/qa_runs/ft_s2 --config.eval.target_value=101 --workdir=DIR`
plus the overrides named; official F1 of the 1,000 eval questions at steps 500, 1,000, ...,
4,000; load average 9-12 on the shared 2-core machine):
  this config, seed 0:
      64.30 70.73 77.22 84.24 85.21 86.37 86.04 86.62    -> 85.0 first at step 2,500
  this config, seed 1 (--config.run.seed=1):
      65.05 72.42 81.65 85.09 85.65 87.32 86.66 87.89    -> 85.0 first at step 2,000
  (both measured with the sizes and weights as overrides, before they were pinned here; seed 1
  again with the pinned config and no override but the teacher and the seed: the same eight
  values bit for bit, 87.88534252470069 at step 4,000)
  embedding 32, layer transfer (--config.model.embedding_size=32), seed 0:
      62.01 67.47 72.82 72.95 81.34 82.84 84.94 85.80    -> 85.0 first at step 4,000
  the same, seed 1 (--config.model.embedding_size=32 --config.run.seed=1):
      63.87 69.31 68.97 79.70 81.02 83.47 84.19 84.07    -> 85.0 not reached
  embedding 128, logits only (--config.model.distill.feature_weight=0
  --config.model.distill.attention_weight=0), seed 0:
      59.50 70.53 74.74 73.00 74.64 75.19 76.33 76.14
The layer transfer is the lever: at embedding 32 it lifts the distilled 2-block student from
73.54 (2026-12-02f, below) to 85.80 at step 4,000; the wider embedding alone (logits only) gives
76.14, as the 4-block and 8,000-step students did, but with the transfer it brings 85.0 forward
from step 4,000 to 2,000-2,500. Seed 1 ends above the teacher (87.89 against 86.89), seed 0 just
under it (86.62); both stay at or above 85.0 from their first step there (at least 85.21 /
85.09); seed 0's margin over the 3-gram rule at step 4,000 is 3.15 F1 (2.8 binomial standard
errors of 1.13). Train losses logged at step 4,000 (seed 0): feature 0.345, attention KL 0.517,
the logits' T^2 KL 0.670, span 0.337 (logits only, embedding 128: KL 2.06, span 0.84): the
student matches the teacher's layers, not only its answers. At embedding 32 seed 1 stops short
(84.07 at step 4,000, 84.19 at most): the wider embedding is what makes 85.0 hold on both seeds.
Served: `tpubench infer bert --config=mobilebert_squad_mini --scenario=SingleStream
--mode=accuracy --params=/tmp/mb3_runs/fa_e128_s0 --workdir=INFER_DIR` (seed 0's step-4,000
checkpoint, no teacher) gives F1 86.62361090616444 over the 1,000 questions, the run's last eval
exactly (LoadGen VALID; the 93% bar 80.56 met); with `--quantize=int8 --calibration_samples=256`
(24 kernels; parameter bytes 2,301,328 against 2,659,336: the 4,096 x 128 word table stays
float) F1 86.69315 against the float 86.62361.
Cost (2026-12-03, load average 9-12, two runs at once; not a speed figure): this config
train 1,667 s + evals 69 s (seed 0), 1,547 s + 64 s (seed 1); embedding 32 with
the transfer 1,577 s + 68 s; embedding 128, logits only 1,445 s + 68 s; init 15-55 s each;
seed 1's rerun (load average 12 falling to 5, serving checks and tests beside it): train 556 s
+ evals 18 s; embedding 32, seed 1 (load average ~5): train 357 s + evals 14 s.

Earlier (embedding 32, no layer transfer: each reproduced with `--config.model.embedding_size=32
--config.model.distill.feature_weight=0 --config.model.distill.attention_weight=0` plus the
overrides named; seed 0; `tpubench run bert --config=mobilebert_squad_mini
--config.eval.target_value=101 --workdir=DIR`). 2026-12-02e, no teacher:
  random init (lr 1e-3, 4,000 steps):
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
the `squad_mini_multi30k` run of step 2 above, seed 2, F1 86.89 at step 4,000; temperature
2.0 and alpha 0.5, as now):
  distilled, 2 blocks (the teacher, embedding 32, no layer transfer):
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
levers, at step 4,000 against random init's 72.11: distillation +1.43 (73.54; it removes the
plateau near 35: 50.37 at step 500, 63.76 at step 1,500), distillation with 4 blocks +4.24
(76.36), with 4 blocks over 8,000 steps +4.07 at step 8,000 (76.18; 76.63 at most, from
step 4,500 on within 74.96-76.63: twice the steps buy nothing); twice the width (no teacher)
+2.22; a higher rate over a longer schedule, or the Shakespeare pre-training: no gain. Every
curve levels off, 7-11 F1 under the char 3-gram rule (83.47) and the teacher (86.89): the
student's size, not its training signal or length, looked like the limit (2026-12-02f's
reading; the layer transfer of 2026-12-03, above, shows it was the signal: the same 2 blocks
reach 85.80). Other temperature / alpha values remain unmeasured (only T 2.0, alpha 0.5).
Served (2026-12-02e's random-init seed-0 checkpoint, embedding 32, no teacher, step 4,000):
`tpubench infer ... --scenario=SingleStream --mode=accuracy` F1 72.10802758897114 over the 1,000
questions, equal to the run's last eval (LoadGen VALID; tests/test_mobilebert.py checks the
equality on a cut-down run; tests/test_squad_workload.py that a distilled run's student restores
and evaluates without its teacher); with `--quantize=int8 --calibration_samples=256` (int8
weights and activations, max calibration, 24 kernels; parameter bytes 691,600 against 939,016)
F1 70.69262 against the float 72.10803 (the 93% bar of the mobile suite, 67.06, met by both).
Cost (2026-12-02e/f): random init's 4,000 steps took 573 s of training and 42 s of evals (223
examples/s) after 42 s of init and ~3 minutes of question conversion, at load average 10-17 on
the shared 2-core machine (not a speed figure); the wide model's took 1,157 s (111 examples/s).
Distilled (the teacher's forward pass in every step), at load average 7-11: 2 blocks 811 s from
run start to the last eval, 4 blocks 1,067 s, 4 blocks over 8,000 steps 1,992 s.
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
    c.model.embedding_size = 128  # the BERT mini teacher's hidden size (MINI_SIZES: 32)
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
    # Layer-wise transfer (workloads/bert/layer_transfer.py): the teacher's 2 layers onto the
    # 2 blocks, block i to layer i (feature maps 128 wide, 2 heads each side).
    c.model.distill.feature_weight = 1.0
    c.model.distill.attention_weight = 1.0
    c.eval.target_value = 85.0  # squad_mini_multi30k's; distilled seeds 0 and 1 (see above)
    c.eval.target_provisional = False  # set here, not inherited
    return c

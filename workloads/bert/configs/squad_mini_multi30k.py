"""Mini: the BERT mini fine-tuned on cross-lingual extractive questions built from Multi30k.

    tpubench run bert --config=mini --workdir=PRE                      # pre-train (the BERT mini)
    tpubench run bert --config=squad_mini_multi30k --config.model.init_params=PRE --workdir=DIR
    tpubench infer bert --config=squad_mini_multi30k --scenario=Offline --mode=accuracy \\
        --params=DIR --workdir=INFER_DIR                               # served as bert-99

Data (`workloads/bert/multi30k_qa.py`): the context is 4 English Multi30k captions, the question
the German translation of one of them, the answer that English caption (the whole sentence).
Train: 29,000 questions, each training sentence asked once (seed 0); eval: the 1,000
test_2016_flickr sentences, each asked once (seed 1). Seq 128 (contexts 51 tokens median, 89
at most; questions <= 40 tokens), so one window per question; vocabulary 4,096: the BERT
mini's 1,024 words (same ids) and the 3,072 commonest lower-cased EN + DE training tokens it
lacks (6.0% of the eval tokens are [UNK], counted on 300 questions).
`model.init_params` = the pre-training run's workdir (`workloads/bert/pretrained.py`).

Baselines (`python benchmarks/baselines_multi30k_qa.py`, the 1,000 eval questions, official
v1.1 F1): first caption 29.28, last 31.62, longest 31.57, shortest 29.01, length match (German
length / the training median ratio) 59.24, word overlap 51.17, length + char 3-grams 72.80,
char 3-gram overlap 83.47 (the strongest rule: cognates and names, Mann/man, Gitarre/guitar).
Not trivial, and far above: a word lexicon learned from the 29,000 training pairs (Dice) then
word overlap, 97.96: the task is solvable by learning which German word goes with which
English one, which is what the model must do from the same pairs. With 8 captions a context
(--captions=8) the rules fall to 18.24-74.48 (3-grams the strongest), the lexicon to 97.31.
Measured: official F1 of the 1,000 eval questions (harness runs, `tpubench run` as above).
(The 2026-12-02 runs used this config as it was then: lr 1e-3, warmup 400, linear decay to 0
at step 4,000, 4,000 steps; to repeat them now add --config.schedule.end_learning_rate=0.0
--config.run.max_train_samples=128000.)
2026-12-02d, PRE = /tmp/qa_pre0 (a `bert --config=mini` run, seed 0, stopped at its target at
step 1,500, MLM accuracy 0.1927), seed 0:
  lr 5e-4, 1,500 steps, eval every 250:   43.44 48.11 49.42 50.02 51.13 51.94
  lr 1e-3, 3,000 steps, eval every 500:   46.68 49.23 65.34 74.19 80.63 82.67
  this config (lr 1e-3, 4,000 steps):     46.61 49.92 63.03 72.25 80.48 83.40 85.94 85.73
(the first two: this config with --config.optimizer.learning_rate, schedule.train_steps,
schedule.warmup_steps = 10%, run.max_train_samples and eval.every_samples overridden).
2026-12-02e, PRE = /tmp/qa_runs/pre0 (`tpubench run bert --config=mini --workdir=PRE`, seed 0:
MLM accuracy .1833 .1850 .1882 .1887 .1903 .1927 at steps 1,000-1,500, the 2026-12-02d PRE's
curve exactly; stopped at its target at step 1,500), each run `tpubench run bert
--config=squad_mini_multi30k --config.model.init_params=PRE --config.eval.target_value=101
--config.run.seed=S [--config.optimizer.learning_rate=LR] --workdir=DIR` (target 101: every
run goes to step 4,000; run.seed is the fine-tuning seed: the span head's and the new
vocabulary rows' init and the training order; the questions are the same for every seed),
F1 at steps 500, 1,000, ..., 4,000:
  this config, seed 1:                    47.94 53.08 57.69 60.84 69.02 74.53 75.88 76.40
  this config, seed 2:                    48.31 51.05 51.78 55.26 75.44 83.62 85.80 86.89
  lr 2e-3, seed 1:                        45.02 50.97 51.82 53.46 55.75 72.65 78.97 81.47
  random init (init_params=""), seed 0:   44.01 47.74 49.88 50.62 51.76 56.62 57.67 57.92
The F1 sits near 50 at first, then climbs (the lexicon being learned) while the rate decays;
the climb starts at a different step for each seed (seed 0 after step 1,000, seeds 1 and 2
after 2,000; with lr 2e-3, seed 1 after 2,500 but faster) and the linear decay to zero at step
4,000 stops it: seeds 0 and 2 end at 85.73 and 86.89, seed 1 at 76.40, below the strongest
rule (3-gram overlap 83.47); lr 2e-3 does not rescue seed 1 (81.47, still below). All stay
below the learned lexicon (97.96). The pre-training makes most of the climb: from random init
(seed 0) the F1 ends at 57.92, 27.8 below the pre-trained seed 0 and below even the length
match rule (59.24). Target 85.0 (chosen from seed 0's curve: above 83.47 by
1.5 F1, 1.4 binomial standard errors (1.13 F1 = sqrt(0.85 x 0.15 / 1,000)); below the
plateaus of seeds 0 and 2), reached at step 3,500 by seeds 0 (85.94) and 2 (85.80), never by
seed 1. PROVISIONAL then: that schedule does not reach it on every seed (1 of 3 seeds does
not even pass the 3-gram rule), and the margin is thin.
Why seed 1 fails (train loss / span accuracy, means over 250 steps, metrics.jsonl of the runs
above): seed 2 sits on a plateau (loss 1.64-1.75, span accuracy 0.10-0.13 at steps 750-1,500)
and then climbs sharply (loss 1.51 -> 0.67, span accuracy 0.22 -> 0.65 at steps 2,000-3,000);
seed 1 at lr 1e-3 leaves the plateau early but slowly (loss 1.46 at step 1,250, span accuracy
0.16 at 1,500, 0.41 at 4,000): another, slow mode, no sharp climb; seed 1 at lr 2e-3 keeps the
plateau (1.60-1.77 at steps 750-2,000) and then climbs sharply (span accuracy 0.65 at 4,000,
still rising when the rate reaches zero).
2026-12-02f, longer schedules, seed 1 (same PRE; `--config.run.seed=1` plus the overrides
named, target 85.0 kept: a run stops at it), F1 at steps 500, 1,000, ...:
  8,000 steps, lr 1e-3 (--config.schedule.train_steps=8000 --config.schedule.warmup_steps=800
  --config.run.max_train_samples=256000; SIGTERM at step 5,875, resumed by the same command):
      46.62 52.02 55.60 58.74 58.91 66.08 75.67 76.41 78.01 78.01 76.29 77.73 77.24 76.76 77.57
      77.72
  6,000 steps, lr 2e-3 (--config.optimizer.learning_rate=2e-3 --config.schedule.train_steps=6000
  --config.schedule.warmup_steps=600 --config.run.max_train_samples=192000):
      46.53 48.93 50.43 50.90 53.08 51.67 53.69 56.60 57.96 65.95 74.65 78.38
  8,000 steps, lr 2e-3 (--config.optimizer.learning_rate=2e-3 plus the 8,000-step overrides):
      47.98 51.51 54.53 55.59 58.61 57.68 59.78 58.94 60.51 59.93 60.72 60.51 60.60 68.50 75.38
      77.86
None reaches 83.47, let alone 85.0. At lr 1e-3 over 8,000 steps seed 1 takes the slow mode
again (train loss 1.31 / span accuracy 0.16 at step 2,000, 0.75 / 0.38 at 5,500, means over
500 steps) and its F1 levels off at 76-78 from step 4,000 to the end (77.72 at 8,000), with
half the rate still to go at step 4,000.
At lr 2e-3 over 6,000 steps it keeps the plateau and climbs sharply once the decaying rate is
down to ~5-7e-4 (span accuracy 0.21 at step 4,000, 0.29 at 4,500, then F1 +20 in 1,500
steps), as seed 2 did at lr 1e-3 (after step 2,000, rate 5e-4). At lr 2e-3 over 8,000 steps it
starts in the slow mode (loss 1.30 / span accuracy 0.15 at step 2,000), sits at F1 58-61 from
step 2,500 to 6,500 (rate 1.4e-3 -> 3.8e-4) and climbs sharply only at the end (span accuracy
0.31, 0.40, 0.56, 0.68 over steps 6,000-8,000, rate 3.8e-4 -> 0), still rising when the rate
runs out. In each of seed 1's sharp climbs (lr 2e-3 over 4,000, 6,000 and 8,000 steps) the
rate was already down to ~8e-4 or less, and the linear decay to zero cut the climb short after
~1,500-2,000 steps (81.47, 78.38, 77.86): a higher peak or a longer linear schedule only moves
it later. Not measured yet: a schedule that holds a low
rate (~2-5e-4) for thousands of steps (a lower peak, or decay to a floor instead of zero):
measured 2026-12-03, below.
2026-12-03, decay to a floor (`schedule.end_learning_rate`, new in the bert configs: TF
polynomial_decay's end value, (peak - end) x (1 - step / train_steps) ** power + end, held after
train_steps; 0 by default, the reference's). Same PRE; each run
`tpubench run bert --config=squad_mini_multi30k --config.model.init_params=/tmp/qa_runs/pre0
--config.run.seed=S --config.eval.target_value=101 --workdir=DIR` plus the overrides named, F1
at steps 500, 1,000, ...; two runs at a time, load average 7.5-10.8 on the shared 2-core machine
(C seed 2: alone, 3.8-6.8):
  A. lr 2e-3, linear to a floor of 3e-4 at step 4,000, then held (--config.optimizer.
  learning_rate=2e-3 --config.schedule.train_steps=4000 --config.schedule.warmup_steps=400
  --config.schedule.end_learning_rate=3e-4 --config.run.max_train_samples=192000):
    seed 1 (SIGTERM at step 5,875, resumed by the same command with
    --config.run.max_train_samples=256000, i.e. to step 8,000):
      46.85 49.31 50.91 51.51 53.83 52.44 59.91 76.81 79.67 79.95 81.67 81.30 82.54 82.61 83.14
      83.66
    seed 0: 44.88 45.73 49.07 50.45 50.32 50.14 51.13 50.94 51.88 50.66 50.91 51.52
  B. lr 2e-3, power 2 to a floor of 3e-4 at step 6,000 (--config.optimizer.learning_rate=2e-3
  --config.schedule.train_steps=6000 --config.schedule.warmup_steps=600
  --config.schedule.decay_power=2.0 --config.schedule.end_learning_rate=3e-4
  --config.run.max_train_samples=192000), seed 1, stopped (SIGTERM) at step 4,225 as hopeless:
      46.53 48.43 52.12 54.16 55.49 58.91 58.47 58.49
  C. this config's 2026-12-02 schedule (lr 1e-3, linear) to a floor of 3e-4 at step 4,000,
  then held to step 6,000 (--config.schedule.train_steps=4000 --config.schedule.warmup_steps=400
  --config.schedule.end_learning_rate=3e-4 --config.run.max_train_samples=192000; now this
  config's own):
    seed 1: 47.63 52.38 56.18 58.10 61.01 57.75 63.33 75.10 80.27 84.26 84.88 85.79
    seed 0: 46.23 51.21 52.52 56.13 71.42 78.52 78.67 79.53 84.23 88.42 89.73 88.92
The floor lifts seed 1 on the plateau-then-climb path (A: it keeps the plateau to step 3,000,
loss 1.55 / span accuracy 0.12, means over 500 steps, climbs from step 3,500 at rate 5e-4 and
keeps climbing at the floor: span accuracy 0.39 at step 4,000, 0.60 at 5,000, 0.72 at 8,000;
F1 81.67 at step 5,500, 83.66 at 8,000, about +0.8 per 1,000 steps at the end, its best yet,
still below 85.0 and only just above the 3-gram rule 83.47), but the same schedule keeps seed 0
on the plateau to the end (F1 50-52 from step 2,000 to 6,000, span accuracy 0.16 at 6,000,
after 2,500 steps at rates <= 5.1e-4, where seeds 1 and 2 climbed): a peak of 2e-3 trades one
seed's failure for another's. B (power 2) sent seed 1 into the slow mode (loss 1.45 / span
accuracy 0.13 at step 2,000) and its F1 sat at 58-59 from step 3,000 to 4,000 (rate 7e-4 ->
5e-4). C (lr 1e-3) sent seed 1 into the slow mode too (loss 1.26 / span accuracy 0.17 at step
2,000, as in the lr 1e-3 runs above), but the floor kept it climbing: F1 75.10 at step 4,000,
where the rate reaches the floor, then 80.27 84.26 84.88 85.79 (span accuracy 0.32 at step
4,000, 0.76 at 6,000), where the 8,000-step lr 1e-3 run above (decaying to 0) sat at 76-78 from
step 4,000 with the rate going 5e-4 -> 0. Seed 0 on C climbs from step 2,000 and passes 85.0 at
step 5,000 (88.42; 88.92 at 6,000), later than with the decay to zero (step 3,500) but higher.
Seed 2 on C: 48.59 51.34 52.45 69.62 82.23 85.35 87.08 88.36 91.23 90.31 90.87 90.58 (85.0 at
step 3,000; climbing from step 1,500, earlier than on the decay to zero, and higher: 90.58 at
6,000).
  C seed 1 continued at the floor (the lead, 2026-12-03: a copy of its workdir, summary.json
  removed, resumed from its step-6,000 checkpoint by the command of C with
  --config.run.max_train_samples=256000; load average 4-6): F1 at steps 6,500 ... 8,000:
      85.60 86.45 87.64 86.00
This config is now C with a 7,000-step budget: lr 1e-3, warmup 400, linear decay to the floor
3e-4 at step 4,000 (schedule.train_steps), then the floor held to step 7,000
(run.max_train_samples; the curves above to step 6,000 do not depend on it); target 85.0
(above the 3-gram rule by 1.5 F1, 1.4 binomial standard errors), no longer provisional: seeds 0,
1 and 2 reach it at steps 5,000, 6,000 and 3,000. The margin is thinnest for seed 1: 85.79 at
step 6,000 (0.79 F1 above the target, 0.7 standard errors), then 85.60 and 86.45 at the two
evals of slack the budget leaves it (6,500 and 7,000); it stays at 85.6-87.6 to step 8,000.
Served: `tpubench infer --mode=accuracy` reproduces the training eval's F1 exactly
(tests/test_multi30k_qa.py, on a cut-down run).
Cost: the 4,000-step run took 1,457 s from run start to the last eval (train 1,371 s, evals
86 s; load average 5-14 on the shared 2-core machine, not a quiet-machine figure), after ~3
minutes from process start (the conversion of the 29,000 questions, init 35 s, compile);
2026-12-02e: 1,590 s (seed 1; train 1,500 s, evals 90 s), 1,277 s (lr 2e-3; train 1,205 s,
evals 72 s) at load average 11-18, 1,019 s (seed 2; train 967 s, evals 52 s) at 9-12, 830 s
(random init; train 779 s) at 8-9. 2026-12-02f, seed 1: 8,000 steps at lr 1e-3, train
1,832 s, evals 108 s (load 6-12); 6,000 at 2e-3, train 1,324 s, evals 75 s (load 6-8);
8,000 at 2e-3, train 1,726 s, evals 90 s (load 6-9). 2026-12-03 (load 7.5-10.8): A seed 1 to
8,000 steps 2,091 s from run start to the last eval (train 1,900 s, evals 109 s, two
attempts), A seed 0 (6,000 steps) 1,486 s (train 1,408 s, evals 78 s); C seed 1 1,476 s
(train 1,397 s, evals 78 s), C seed 0 1,322 s (train 1,249 s, evals 73 s), C seed 2
813 s (train 767 s, evals 45 s; load 3.8-6.8, the other run of mine done).
"""

from workloads.bert.configs import squad_mini

STEPS = 7000  # the run: the decay to the floor over DECAY_STEPS, then the floor held
DECAY_STEPS = 4000
BATCH = 32


def get_config():
    """The cross-lingual Multi30k SQuAD mini config."""
    c = squad_mini.get_config()
    c.config_name = "squad_mini_multi30k"
    c.data.source = "multi30k_qa"
    c.data.dataset = "multi30k-qa"
    del c.data["quote_in_context"]
    c.model.vocab_size = 4096
    c.data.captions = 4
    c.data.train_questions = 29_000
    c.data.eval_questions = 1000
    c.data.max_seq_length = 128
    c.data.max_query_length = 40
    c.data.doc_stride = 64
    c.eval.max_answer_length = 40
    c.data.global_batch_size = BATCH
    c.eval.every_samples = 500 * BATCH
    c.run.max_train_samples = STEPS * BATCH
    c.optimizer.learning_rate = 1e-3
    c.schedule.warmup_steps = DECAY_STEPS // 10
    c.schedule.train_steps = DECAY_STEPS  # the rate reaches end_learning_rate here, then stays
    c.schedule.end_learning_rate = 3e-4
    # Above every rule baseline (83.47); seeds 0, 1, 2: steps 5,000, 6,000, 3,000.
    c.eval.target_value = 85.0
    c.eval.target_provisional = False
    return c

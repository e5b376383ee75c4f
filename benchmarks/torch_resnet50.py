"""PyTorch eager ResNet-50 v1.5 train steps, the CPU reference point of `cpu_gap.py` (issue 17.5).

The same model as workloads/resnet/model.py (v1.5: stride in the 3x3 conv; 25,557,032 params;
zero-initialised last batch-norm scale of each block), channels-last, float32, SGD with momentum
0.9 on softmax cross-entropy: what `cpu_gap.py`'s JAX variants run. Written here because
torchvision's wheels do not import beside the CPU torch wheel on this machine; the parameter
count is checked at start against the Flax model's.

Run by `cpu_gap.py` as a worker (stdin: a number of steps per line; stdout: one JSON line per
request), with any Python that has torch:

    /tmp/tv/bin/python benchmarks/torch_resnet50.py --batch=32
"""

from __future__ import annotations

import argparse
import time

import step_worker
import torch
from torch import nn

RESNET50_PARAMS = 25_557_032  # workloads/resnet/model.py's docstring


class Bottleneck(nn.Module):
    def __init__(self, cin: int, filters: int, stride: int):
        super().__init__()
        out = filters * 4
        self.conv1 = nn.Conv2d(cin, filters, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(filters)
        self.conv2 = nn.Conv2d(filters, filters, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(filters)
        self.conv3 = nn.Conv2d(filters, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        nn.init.zeros_(self.bn3.weight)
        self.proj = None
        if stride != 1 or cin != out:
            self.proj = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False),
                                      nn.BatchNorm2d(out))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return torch.relu(y + (x if self.proj is None else self.proj(x)))


def resnet50(num_classes: int = 1000) -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                               nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for i, blocks in enumerate((3, 4, 6, 3)):
        for j in range(blocks):
            filters = 64 * 2**i
            layers.append(Bottleneck(cin, filters, 2 if i > 0 and j == 0 else 1))
            cin = filters * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, num_classes)]
    return nn.Sequential(*layers)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--image", type=int, default=224)
    args = p.parse_args()
    torch.manual_seed(0)
    t = time.perf_counter()
    model = resnet50().to(memory_format=torch.channels_last)
    n = sum(p.numel() for p in model.parameters())
    if n != RESNET50_PARAMS:
        raise SystemExit(f"torch ResNet-50 has {n} params, expected {RESNET50_PARAMS}")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(args.batch, 3, args.image, args.image).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (args.batch,))
    loss_fn = nn.CrossEntropyLoss()

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach().item()

    step()  # first step (allocations), not timed
    step_worker.serve(step, {"init_compile_s": time.perf_counter() - t, "params": n,
                             "torch": torch.__version__, "threads": torch.get_num_threads()})


if __name__ == "__main__":
    main()

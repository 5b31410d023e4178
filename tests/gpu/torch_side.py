#!/usr/bin/env python3
"""torch_side.py — PyTorch on one GPU, side by side with dt's run of the same
job file (tests/gpu/run.sh): the same model ([model] layers), batch, lr,
optimizer (SGD, momentum, Nesterov, weight decay), epochs and data
(Fashion-MNIST from --data), fp32 (TF32 off: PyTorch's default lets
cuDNN's convolutions use TF32; --tf32 turns it on for convolutions and
matrix products, dt's precision = tf32), eager. Batches are copied host to device
every step from pinned memory, as dt's trainer does; no schedule or warmup
(dt's cosine schedule does not change the speed).

    python3 tests/gpu/torch_side.py JOB.ini --data DIR [--epochs E]
        [--max-steps N] [--batch B] [--amp bf16] [--channels-last]
        [--benchmark] [--tf32]

--amp bf16 --channels-last --benchmark is PyTorch's fast path for CNNs
(autocast to bf16, NHWC tensors, cudnn.benchmark), what the issue's
ResNet target compares dt's precision = bf16 with. The model comes from
bench/torch_ddp.py's builder of dt's layer syntax (ResNet stages,
batchnorm, gap included).

Prints one line that run.sh parses:
    torch: samples/s S  test_accuracy A%  peak_mem_MiB M  epochs E  steps N
(samples/s over the training steps alone, after the first 20 steps as
warm-up; peak_mem: torch.cuda.max_memory_allocated). Exit 77 without a GPU.
"""
import argparse
import configparser
import gzip
import os
import sys
import time

import numpy as np

try:
    import torch
    import torch.nn as nn
except ImportError as e:  # this machine: no torch
    print("torch_side: SKIP: no torch (%s)" % e)
    sys.exit(77)

# dt's layer syntax -> nn.Sequential: the same builder as the CPU bench.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
from torch_ddp import build_model  # noqa: E402


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("job")
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=0)
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--amp", choices=("none", "bf16"), default="none")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--benchmark", action="store_true")
    ap.add_argument("--tf32", action="store_true")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = a.benchmark
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    cfg = configparser.ConfigParser(inline_comment_prefixes=("#", ";"))
    cfg.read(a.job)
    if not torch.cuda.is_available():
        print("torch_side: SKIP: torch %s sees no GPU" % torch.__version__)
        sys.exit(77)
    dev = torch.device("cuda")
    seed = cfg.getint("train", "seed", fallback=0)
    torch.manual_seed(seed)
    batch = a.batch or cfg.getint("train", "batch_size", fallback=64)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    lr = cfg.getfloat("train", "lr", fallback=0.01)  # N = 1: linear scaling x1
    epochs = a.epochs or cfg.getint("train", "epochs", fallback=1)
    mean = cfg.getfloat("data", "mean", fallback=0.0)
    std = cfg.getfloat("data", "std", fallback=1.0)
    sgd = "optimizer.sgd"

    def prep(x):
        x = (torch.from_numpy(x.astype(np.float32)) / 255.0 - mean) / std
        return x.unsqueeze(1).contiguous()

    xtr = prep(read_idx(a.data + "/train-images-idx3-ubyte.gz")).pin_memory()
    ytr = torch.from_numpy(read_idx(a.data + "/train-labels-idx1-ubyte.gz")
                           .astype(np.int64)).pin_memory()
    xte = prep(read_idx(a.data + "/t10k-images-idx3-ubyte.gz")).to(dev)
    yte = torch.from_numpy(read_idx(a.data + "/t10k-labels-idx1-ubyte.gz")
                           .astype(np.int64)).to(dev)

    model = build_model(cfg.get("model", "layers")).to(dev, memory_format=fmt)
    opt = torch.optim.SGD(
        model.parameters(), lr=lr,
        momentum=cfg.getfloat(sgd, "momentum", fallback=0.0),
        nesterov=cfg.get(sgd, "nesterov", fallback="no") in ("yes", "true", "1", "on"),
        weight_decay=cfg.getfloat(sgd, "weight_decay", fallback=0.0))
    loss_fn = nn.CrossEntropyLoss()
    torch.cuda.reset_peak_memory_stats()
    n = len(ytr)
    steps = samples = 0
    timed = 0.0
    warm = 20
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(n, generator=g)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for at in range(0, n - batch + 1, batch):
            if steps == warm:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
            b = perm[at:at + batch]
            x = xtr[b].pin_memory().to(dev, non_blocking=True)
            x = x.contiguous(memory_format=fmt)
            y = ytr[b].pin_memory().to(dev, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16,
                                enabled=a.amp == "bf16"):
                loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            steps += 1
            if steps > warm:
                samples += batch
            if a.max_steps and steps >= a.max_steps:
                break
        torch.cuda.synchronize()
        timed += time.perf_counter() - t0
        if a.max_steps and steps >= a.max_steps:
            break
    model.eval()
    correct = 0
    with torch.no_grad():
        for at in range(0, len(yte), 1000):
            xb = xte[at:at + 1000].contiguous(memory_format=fmt)
            with torch.autocast("cuda", dtype=torch.bfloat16,
                                enabled=a.amp == "bf16"):
                correct += (model(xb).argmax(1) == yte[at:at + 1000]).sum().item()
    print("torch: samples/s %.0f  test_accuracy %.2f%%  peak_mem_MiB %.0f  "
          "epochs %d  steps %d  amp %s%s%s%s  (torch %s, cuda %s, cudnn %s, %s)"
          % (samples / timed if timed > 0 else 0, 100.0 * correct / len(yte),
             torch.cuda.max_memory_allocated() / 2**20, epochs, steps,
             a.amp, " channels_last" if a.channels_last else "",
             " cudnn.benchmark" if a.benchmark else "",
             " tf32" if a.tf32 else "",
             torch.__version__, torch.version.cuda,
             torch.backends.cudnn.version(), torch.cuda.get_device_name(0)),
          flush=True)


if __name__ == "__main__":
    main()

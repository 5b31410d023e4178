#!/usr/bin/env python3
"""torch_side.py — PyTorch on one GPU, side by side with dt's run of the same
job file (tests/gpu/run.sh): the same model ([model] layers), batch, lr,
optimizer (SGD, momentum, Nesterov, weight decay), epochs and data
(Fashion-MNIST from --data), fp32, eager. Batches are copied host to device
every step from pinned memory, as dt's trainer does; no schedule or warmup
(dt's cosine schedule does not change the speed).

    python3 tests/gpu/torch_side.py JOB.ini --data DIR [--epochs E]

Prints one line that run.sh parses:
    torch: samples/s S  test_accuracy A%  peak_mem_MiB M  epochs E  steps N
(samples/s over the training steps alone, after the first 20 steps as
warm-up; peak_mem: torch.cuda.max_memory_allocated). Exit 77 without a GPU.
"""
import argparse
import configparser
import gzip
import re
import sys
import time

import numpy as np

try:
    import torch
    import torch.nn as nn
except ImportError as e:  # this machine: no torch
    print("torch_side: SKIP: no torch (%s)" % e)
    sys.exit(77)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def build_model(text):
    """dt's layer syntax -> nn.Sequential (bench/torch_ddp.py's subset)."""
    layers, c, h, w, flat = [], 1, 28, 28, None
    for tok in re.findall(r"[a-z0-9_]+(?:\([^)]*\))?", text):
        name, _, args = tok.partition("(")
        pos = [a for a in args.rstrip(")").split(",") if a and "=" not in a]
        kw = dict(a.split("=") for a in args.rstrip(")").split(",") if "=" in a)
        if name in ("conv", "conv2d"):
            out, k = int(pos[0]), int(pos[1])
            pad = int(kw.get("pad", 0))
            stride = int(kw.get("stride", 1))
            layers.append(nn.Conv2d(c, out, k, stride=stride, padding=pad,
                                    bias=kw.get("bias", "yes") != "no"))
            c, h, w = out, (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        elif name == "maxpool":
            k = int(pos[0])
            layers.append(nn.MaxPool2d(k))
            h, w = h // k, w // k
        elif name == "relu":
            layers.append(nn.ReLU())
        elif name == "flatten":
            layers.append(nn.Flatten())
            flat = c * h * w
        elif name == "linear":
            n_in = flat if flat is not None else c * h * w
            layers.append(nn.Linear(n_in, int(pos[0])))
            flat = int(pos[0])
        elif name == "dropout":
            layers.append(nn.Dropout(float(pos[0]) if pos else 0.5))
        else:
            print("torch_side: SKIP: layer %r not supported here" % name)
            sys.exit(77)
    return nn.Sequential(*layers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("job")
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=0)
    a = ap.parse_args()
    cfg = configparser.ConfigParser(inline_comment_prefixes=("#", ";"))
    cfg.read(a.job)
    if not torch.cuda.is_available():
        print("torch_side: SKIP: torch %s sees no GPU" % torch.__version__)
        sys.exit(77)
    dev = torch.device("cuda")
    seed = cfg.getint("train", "seed", fallback=0)
    torch.manual_seed(seed)
    batch = cfg.getint("train", "batch_size", fallback=64)
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

    model = build_model(cfg.get("model", "layers")).to(dev)
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
            y = ytr[b].pin_memory().to(dev, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            steps += 1
            if steps > warm:
                samples += batch
        torch.cuda.synchronize()
        timed += time.perf_counter() - t0
    model.eval()
    correct = 0
    with torch.no_grad():
        for at in range(0, len(yte), 1000):
            correct += (model(xte[at:at + 1000]).argmax(1) == yte[at:at + 1000]).sum().item()
    print("torch: samples/s %.0f  test_accuracy %.2f%%  peak_mem_MiB %.0f  "
          "epochs %d  steps %d  (torch %s, cuda %s, cudnn %s, %s)"
          % (samples / timed if timed > 0 else 0, 100.0 * correct / len(yte),
             torch.cuda.max_memory_allocated() / 2**20, epochs, steps,
             torch.__version__, torch.version.cuda,
             torch.backends.cudnn.version(), torch.cuda.get_device_name(0)),
          flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""torch_ddp.py — PyTorch DDP (gloo, CPU) on the model, data, batch and
optimizer of a dt job file, for bench/compare-train.sh.

Started by `dtctl run -n N -- /usr/bin/python3 bench/torch_ddp.py JOB.ini`:
dtctl sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT as torchrun does.
Reads [train] batch_size/lr/lr_scaling (and its caps)/epochs/max_steps/
seed/threads, [optimizer.sgd] momentum/nesterov/weight_decay, [model]
layers and [data] mean/std/train_samples from the job file (and DT_*
overrides, like dt),
trains one epoch (or max_steps steps) and prints on rank 0:
    torch: N samples/s (global)
"""
import configparser
import gzip
import os
import re
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

DATA = "/usr/share/datasets/fashion-mnist"


def setting(cfg, section, key, default):
    env = "DT_%s_%s" % (section.replace(".", "_").upper(), key.upper())
    if os.environ.get(env):
        return os.environ[env]
    return cfg.get(section, key, fallback=default)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class BasicBlock(nn.Module):
    """dt's stage(basic,...) block (core/nn/model_parse.c): conv3x3(stride)
    BN ReLU conv3x3 BN, plus the input or a 1x1 strided conv + BN of it
    where the shape changes, then ReLU."""

    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = None
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.shortcut is None else self.shortcut(x)))


def yes(v):
    return v in ("yes", "true", "on", "1")


def build_model(text):
    """dt's layer syntax -> nn.Sequential, so both sides train the same
    model: conv (stride, pad, bias), maxpool, avgpool, gap, relu,
    batchnorm (2-D or 1-D by its input), stage(basic,C,n,stride=s),
    flatten, linear, dropout."""
    layers, c, h, w, flat = [], 1, 28, 28, None
    for tok in re.findall(r"[a-z0-9_]+(?:\([^)]*\))?", text):
        name, _, args = tok.partition("(")
        items = [a.strip() for a in args.rstrip(")").split(",") if a.strip()]
        kw = dict(a.split("=", 1) for a in items if "=" in a)
        pos = [a for a in items if "=" not in a]
        if name in ("conv", "conv2d"):
            out, k = int(pos[0]), int(pos[1])
            stride = int(kw.get("stride", pos[2] if len(pos) > 2 else 1))
            pad = int(kw.get("pad", pos[3] if len(pos) > 3 else 0))
            bias = yes(kw.get("bias", pos[4] if len(pos) > 4 else "yes"))
            layers.append(nn.Conv2d(c, out, k, stride=stride, padding=pad, bias=bias))
            c, h, w = out, (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        elif name in ("maxpool", "maxpool2d", "avgpool", "avgpool2d"):
            k = int(pos[0])
            stride = int(kw.get("stride", pos[1] if len(pos) > 1 else k))
            pool = nn.MaxPool2d if name.startswith("max") else nn.AvgPool2d
            layers.append(pool(k, stride=stride))
            h, w = (h - k) // stride + 1, (w - k) // stride + 1
        elif name == "gap":
            layers.append(nn.AdaptiveAvgPool2d(1))
            h = w = 1
        elif name == "relu":
            layers.append(nn.ReLU(inplace=True))
        elif name in ("batchnorm", "bn"):
            mom = float(kw.get("momentum", pos[0] if pos else 0.1))
            eps = float(kw.get("eps", pos[1] if len(pos) > 1 else 1e-5))
            if flat is None:
                layers.append(nn.BatchNorm2d(c, eps=eps, momentum=mom))
            else:
                layers.append(nn.BatchNorm1d(flat, eps=eps, momentum=mom))
        elif name == "stage":
            if pos[0] != "basic":
                sys.exit("torch_ddp.py: stage block %r not supported" % pos[0])
            out, n = int(pos[1]), int(pos[2])
            stride = int(kw.get("stride", pos[3] if len(pos) > 3 else 1))
            for b in range(n):
                s = stride if b == 0 else 1
                layers.append(BasicBlock(c, out, s))
                c, h, w = out, (h + 2 - 3) // s + 1, (w + 2 - 3) // s + 1
        elif name == "flatten":
            layers.append(nn.Flatten())
            flat = c * h * w
        elif name == "linear":
            n_in = flat if flat is not None else c * h * w
            layers.append(nn.Linear(n_in, int(pos[0])))
            flat = int(pos[0])
        elif name == "dropout":
            layers.append(nn.Dropout(float(kw.get("p", pos[0] if pos else 0.5))))
        else:
            sys.exit("torch_ddp.py: layer %r not supported" % name)
    return nn.Sequential(*layers)


def main():
    cfg = configparser.ConfigParser(inline_comment_prefixes=("#", ";"))
    cfg.read(sys.argv[1])
    threads = int(setting(cfg, "train", "threads", "1"))
    torch.set_num_threads(threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    seed = int(setting(cfg, "train", "seed", "0"))
    torch.manual_seed(seed)

    batch = int(setting(cfg, "train", "batch_size", "64"))
    lr = float(setting(cfg, "train", "lr", "0.01"))
    # dt's lr_scaling, with its caps (core/lr_schedule.c); no warmup or
    # schedule: this measures throughput.
    workers = world
    max_batch = int(setting(cfg, "train", "lr_scaling_max_batch", "0"))
    if max_batch and max_batch < world * batch:
        workers = max(1.0, max_batch / batch)
    scaling = setting(cfg, "train", "lr_scaling", "none")
    if scaling == "linear":
        lr *= workers
    elif scaling == "sqrt":
        lr *= workers ** 0.5
    max_lr = float(setting(cfg, "train", "lr_scaling_max_lr", "0"))
    if max_lr and lr > max_lr:
        lr = max_lr
    max_steps = int(setting(cfg, "train", "max_steps", "0"))
    mean = float(setting(cfg, "data", "mean", "0"))
    std = float(setting(cfg, "data", "std", "1"))
    limit = int(setting(cfg, "data", "train_samples", "0"))

    x = read_idx(DATA + "/train-images-idx3-ubyte.gz")
    y = read_idx(DATA + "/train-labels-idx1-ubyte.gz")
    if limit:
        x, y = x[:limit], y[:limit]
    x = (torch.from_numpy(x.astype(np.float32)) / 255.0 - mean) / std
    x = x.unsqueeze(1).contiguous()
    y = torch.from_numpy(y.astype(np.int64))

    model = DDP(build_model(setting(cfg, "model", "layers", "")))
    opt = torch.optim.SGD(
        model.parameters(), lr=lr,
        momentum=float(setting(cfg, "optimizer.sgd", "momentum", "0")),
        nesterov=setting(cfg, "optimizer.sgd", "nesterov", "no") in ("yes", "true", "1", "on"),
        weight_decay=float(setting(cfg, "optimizer.sgd", "weight_decay", "0")))
    loss_fn = nn.CrossEntropyLoss()
    sampler = DistributedSampler(range(len(y)), num_replicas=world, rank=rank,
                                 shuffle=True, seed=seed)
    sampler.set_epoch(0)
    idx = torch.tensor(list(iter(sampler)))

    model.train()
    dist.barrier()
    t0 = time.perf_counter()
    samples = 0
    for step, at in enumerate(range(0, len(idx), batch)):
        if max_steps and step >= max_steps:
            break
        b = idx[at:at + batch]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[b]), y[b])
        loss.backward()
        opt.step()
        samples += len(b)
    dist.barrier()
    seconds = time.perf_counter() - t0
    total = torch.tensor([float(samples)])
    dist.all_reduce(total)
    if rank == 0:
        print("torch: %.1f samples/s (global; %d samples in %.2f s, loss %.4f)"
              % (total.item() / seconds, int(total.item()), seconds, loss.item()),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

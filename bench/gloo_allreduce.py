#!/usr/bin/python3
"""gloo_allreduce.py - PyTorch's gloo allreduce, measured exactly as dt's and
Open MPI's benchmarks measure theirs (bench/bench_args.h): float32 sum, out
of place (a fresh output tensor each time, as dt's benchmark does), same
inputs, barrier before each iteration, the slowest rank's time, median, the
same table. Launch it with dtctl, which gives it torch's env:// variables:

    dtctl run -n 2 -- /usr/bin/python3 bench/gloo_allreduce.py --sizes 4K:256M
"""
import argparse
import time

import torch
import torch.distributed as dist


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(text[:-1]) * mult[text[-1]] if text[-1] in mult else int(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4K:256M")
    ap.add_argument("--factor", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    lo, hi = (parse_size(s) for s in a.sizes.split(":"))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"# PyTorch {torch.__version__} gloo allreduce: {n} ranks, "
              f"float32 sum, median of up to {a.iters} iterations "
              f"({a.warmup} warm-up)")
        print("# %12s %12s %11s %11s %11s %6s" % (
            "bytes", "count", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
            "check"))
    bad = 0
    size = lo
    while size <= hi:
        count = size // 4
        pattern = torch.arange(count, dtype=torch.int64) % 7 + 1
        send = (pattern * (rank + 1)).to(torch.float32)
        expect = (pattern * (n * (n + 1) // 2)).to(torch.float32)
        iters = max(5, min(a.iters, (1 << 30) // size))
        samples = []
        for it in range(-a.warmup, iters):
            buf = send.clone()          # gloo reduces in place: copy first
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(buf)
            t = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            if it >= 0:
                samples.append(t.item())
        wrong = torch.tensor([int((buf != expect).sum())])
        dist.all_reduce(wrong)
        bad |= int(wrong) != 0
        samples.sort()
        secs = samples[len(samples) // 2]
        if rank == 0:
            algbw = count * 4 / secs / 1e9
            busbw = algbw * 2 * (n - 1) / n
            check = "ok" if int(wrong) == 0 else f"{int(wrong)} bad"
            # whole floats, as the C benchmarks show it: the tables join
            print("  %12d %12d %11.2f %11.3f %11.3f %6s" % (
                count * 4, count, secs * 1e6, algbw, busbw, check), flush=True)
        size *= a.factor
    dist.destroy_process_group()
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

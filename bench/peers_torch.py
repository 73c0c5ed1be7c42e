#!/usr/bin/env python3
"""bench/peers_torch.py - one PyTorch run of the strata GPT for bench/peers.

  peers_torch.py SETUP LAYERS DIM HEADS SEQ ROWS STEPS THREADS [DEVICE]

SETUP: eager (one process), compile (one process, torch.compile) or fsdp2
(2 ranks over gloo, fully_shard per block and on the root, mp.spawn). The
model is python/strata_gpt.py's, trained as train_gpt trains it (AdamW,
lr 1e-3, betas 0.9/0.95, no weight decay, clip 1.0) on train_gpt's rows of
the generated addition task (seed 1), ROWS rows per step in all: rank r
of the fsdp run takes rows r*ROWS/2 .. of each step's global batch. Prints one JSON object: params, tokens_per_s (global
tokens per second, median over the steps after the first), peak_rss_bytes
(the largest rank's), or error (a run that failed, e.g. compile without a
C++ compiler). Exits 0 whenever it printed.
DEVICE: cpu (the default) or cuda (eager and compile only: the model and
each step's rows on the GPU, a step timed to torch.cuda.synchronize(); also
prints peak_device_bytes, torch.cuda.max_memory_allocated). t/gpu/device-check.sh
runs eager on cuda against train_gpt --device cuda.
"""
import json
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import strata_gpt  # noqa: E402

FSDP_RANKS = 2


def train(rank, world, cfg, batch, steps, compiled, device="cpu"):
    """The step times (s) of one rank's training loop."""
    import torch
    torch.manual_seed(1)
    model = strata_gpt.GPT(cfg).to(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    if world > 1:
        from torch.distributed.fsdp import fully_shard
        for b in model.blocks:
            fully_shard(b)
        fully_shard(model)
    fwd = torch.compile(model.loss_sum) if compiled else model.loss_sum
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.0)
    times = []
    for step in range(steps):
        ins, tgs = strata_gpt.addition_rows(strata_gpt.SPLIT_TRAIN, 1, step, rank * batch, batch,
                                            cfg["seq"])
        ins, tgs = torch.tensor(ins, device=device), torch.tensor(tgs, device=device)
        sync()
        t0 = time.perf_counter()
        ls, n = fwd(ins, tgs)
        (ls / n).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        times.append(time.perf_counter() - t0)
    return times


def summary(times, tokens_step, rss):
    steady = times[1:] if len(times) > 1 else times
    return {"tokens_per_s": tokens_step / statistics.median(steady), "peak_rss_bytes": rss}


def fsdp_rank(rank, cfg, batch, steps, port, queue):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=FSDP_RANKS)
    try:
        times = train(rank, FSDP_RANKS, cfg, batch // FSDP_RANKS, steps, False)
        # a step ends when the slowest rank's does
        t = torch.tensor(times, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        rss = torch.tensor([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024])
        dist.all_reduce(rss, op=dist.ReduceOp.MAX)
        if rank == 0:
            queue.put(summary(t.tolist(), batch * cfg["seq"], int(rss.item())))
    finally:
        dist.destroy_process_group()


def run_fsdp(cfg, batch, steps):
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:    # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(fsdp_rank, args=(cfg, batch, steps, port, queue), nprocs=FSDP_RANKS, join=True)
    return queue.get()


def main(argv):
    device = argv[8] if len(argv) == 9 else "cpu"
    if (len(argv) not in (8, 9) or argv[0] not in ("eager", "compile", "fsdp2") or
            device not in ("cpu", "cuda") or (device == "cuda" and argv[0] == "fsdp2")):
        print(__doc__, file=sys.stderr)
        return 2
    setup = argv[0]
    L, C, H, T, B, steps, threads = (int(x) for x in argv[1:8])
    cfg = dict(layers=L, dim=C, heads=H, seq=T)
    import torch
    out = {"params": sum(p.numel() for p in strata_gpt.GPT(cfg).parameters())}
    try:
        if setup == "fsdp2":
            out.update(run_fsdp(cfg, B, steps))
        else:
            torch.set_num_threads(threads)
            times = train(0, 1, cfg, B, steps, setup == "compile", device)
            out.update(summary(times, B * T, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))
            if device == "cuda":
                out["peak_device_bytes"] = torch.cuda.max_memory_allocated()
    except Exception as e:   # reported as the row's status, the bench goes on
        out["error"] = (type(e).__name__ + ": " + str(e)).splitlines()[0][:200]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

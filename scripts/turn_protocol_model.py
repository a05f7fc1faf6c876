"""A model of the warp-specialized forward kernels' mbarrier protocol, explored under random
schedules on the CPU: does any interleaving deadlock?

Models forward_kernel_stride.cu (runs of `cols` items in `nbuf` input buffers) and, with
--ws, forward_wgmma_ws.cu (no input buffers; `chunks` stages per item). Actors: the producer
thread, the asynchronous copies, and each warp of the two consumer warpgroups. mbarriers have
a phase and an arrival count; a parity wait is evaluated only when its actor is scheduled, as a
spinning warp polls, so a barrier that moves two phases between two polls is missed, as on the
GPU. A warpgroup's MMA is collective (its four warps meet before any goes on), and the epilogue's
named barrier is a meeting of the consumer's four warps (twice per item).

usage: python scripts/turn_protocol_model.py [--turn-arrivals 1|4] [--ws] [--seeds N]
  --turn-arrivals 1: the protocol before the twenty-second session (thread 0 arrives on a turn);
  4: one arrival per warp (now). Prints how many seeds deadlocked and one deadlocked state.
"""
import argparse
import random


class MBarrier:
    def __init__(self, count):
        self.count = count
        self.pending = count
        self.phase = 0

    def arrive(self):
        self.pending -= 1
        assert self.pending >= 0, "more arrivals than expected in one phase"
        if self.pending == 0:
            self.phase += 1
            self.pending = self.count

    def done(self, parity):
        """try_wait.parity: the phase of this parity has completed, i.e. the current phase's
        parity differs."""
        return (self.phase & 1) != parity


class Meeting:
    """A rendezvous of `count` actors (bar.sync of one consumer, a collective MMA)."""

    def __init__(self, count):
        self.count = count
        self.arrived = 0
        self.generation = 0

    def arrive(self):
        self.arrived += 1
        gen = self.generation
        if self.arrived == self.count:
            self.arrived = 0
            self.generation += 1
        return gen

    def passed(self, gen):
        return self.generation > gen


def simulate(seed, turn_arrivals, ws, runs, cols, nbuf, stages, chunks, max_steps=200000):
    rng = random.Random(seed)
    full = [MBarrier(1) for _ in range(stages)]
    empty = [MBarrier(4) for _ in range(stages)]
    xfull = [MBarrier(1) for _ in range(nbuf)]
    xempty = [MBarrier(8) for _ in range(nbuf)]
    turn = [MBarrier(turn_arrivals), MBarrier(turn_arrivals)]
    mma = [Meeting(4), Meeting(4)]
    bar = [Meeting(4), Meeting(4)]
    copies = []  # pending asynchronous copies: barriers they complete

    def producer():
        k = 0
        for rl in range(runs):
            if not ws:
                buf = rl % nbuf
                if rl >= nbuf:
                    while not xempty[buf].done(((rl // nbuf) - 1) & 1):
                        yield ("wait xempty", buf)
                copies.append(xfull[buf])
                yield ("issued x", rl)
            for _col in range(cols):
                for _c in range(chunks):
                    s = k % stages
                    if k >= stages:
                        while not empty[s].done(((k // stages) - 1) & 1):
                            yield ("wait empty", s, k)
                    copies.append(full[s])
                    k += 1
                    yield ("issued w", k - 1)

    def consumer(cw, warp):
        for rl in range(runs):
            buf = rl % nbuf
            if not ws:
                while not xfull[buf].done((rl // nbuf) & 1):
                    yield ("wait xfull", rl)
            j0 = rl * cols
            for col in range((j0 + cw) & 1, cols, 2):
                j = j0 + col
                n = j // 2
                for _ in range(rng.randrange(1, 4)):  # the per-item bias load and set-up
                    yield ("setup", j)
                if cw == 0 and j > 0:
                    while not turn[0].done((n - 1) & 1):
                        yield ("wait turn0", j)
                if cw == 1:
                    while not turn[1].done(n & 1):
                        yield ("wait turn1", j)
                prev = None
                for c in range(chunks):
                    k = j * chunks + c
                    s = k % stages
                    while not full[s].done((k // stages) & 1):
                        yield ("wait full", s, k)
                    if c == chunks - 1 and (turn_arrivals == 4 or warp == 0):
                        turn[1 - cw].arrive()
                    gen = mma[cw].arrive()  # the collective MMA: all four warps issue it
                    while not mma[cw].passed(gen):
                        yield ("in mma", j, c)
                    if prev is not None:
                        empty[prev].arrive()
                    prev = s
                empty[prev].arrive()
                for b in range(2):  # the epilogue's two named barriers
                    gen = bar[cw].arrive()
                    while not bar[cw].passed(gen):
                        yield ("bar.sync", j, b)
            if not ws:
                xempty[buf].arrive()

    actors = {"producer": producer()}
    for cw in range(2):
        for w in range(4):
            actors[f"c{cw}w{w}"] = consumer(cw, w)
    state = {name: None for name in actors}
    # Per-actor speeds: some warps are slow this seed (scheduling, memory latency).
    weight = {name: rng.choice([1, 1, 1, 0.3, 0.05]) for name in actors}
    for _ in range(max_steps):
        live = list(actors)
        choices = live + (["copy"] if copies else [])
        if not live and not copies:
            return None
        w = [weight.get(c, 2.0) for c in choices]
        pick = rng.choices(choices, weights=w)[0]
        if pick == "copy":
            copies.pop(rng.randrange(len(copies))).arrive()
            continue
        try:
            state[pick] = next(actors[pick])
        except StopIteration:
            del actors[pick]
            state[pick] = "done"
        # Deadlock: nothing can move (every live actor re-polls a false wait, no copy in flight).
        if not copies and actors and all(_stuck(state[a]) for a in actors):
            snapshot = {a: state[a] for a in actors}
            # Give every actor one more poll each: if none moves, it is a deadlock.
            moved = False
            for a in list(actors):
                before = state[a]
                try:
                    state[a] = next(actors[a])
                except StopIteration:
                    del actors[a]
                    moved = True
                    continue
                if state[a] != before:
                    moved = True
            if not moved:
                return snapshot
    return "step limit"


def _stuck(st):
    return st is not None and st[0].startswith(("wait", "in mma", "bar.sync"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--turn-arrivals", type=int, choices=(1, 4), default=4)
    ap.add_argument("--ws", action="store_true", help="forward_wgmma_ws.cu: no input buffers")
    ap.add_argument("--seeds", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--cols", type=int, default=4)
    ap.add_argument("--nbuf", type=int, default=2)
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--chunks", type=int, default=1, help="stages per item")
    a = ap.parse_args()
    bad, example = 0, None
    for seed in range(a.seeds):
        r = simulate(seed, a.turn_arrivals, a.ws, a.runs, a.cols, a.nbuf, a.stages, a.chunks)
        if r is not None:
            bad += 1
            example = example or (seed, r)
    print(f"turn arrivals {a.turn_arrivals}, {'ws' if a.ws else 'kernel == stride'}, "
          f"runs {a.runs} x {a.cols} items, {a.nbuf} buffers, {a.stages} stages, {a.chunks} chunks per item: "
          f"{bad} of {a.seeds} seeds deadlocked")
    if example:
        print("e.g. seed", example[0], example[1])
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

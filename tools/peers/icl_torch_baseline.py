#!/usr/bin/env python3
"""PyTorch-CPU baseline of rill's in-context-learning linear transformer training step.

Trains the same model on the same fresh random linear-regression tasks as rill's ICL trainer
(rill::icl, settings after Ahn et al. arXiv 2310.01082 and Vladymyrov et al. arXiv 2402.14180),
in plain idiomatic PyTorch, so rill's throughput can be compared with a CPU framework. Prints one
JSON object on stdout.

Shapes: B tasks per batch, T = n + 1 tokens per task, D1 = d + 1 token width.
  tokens:  E[b, i] = (x_i, y_i) for context i < n, E[b, n] = (x_q, 0) for the query
  layer l: A = sum_{j<n} e_j e_j^T            [B, D1, D1]  (context tokens only)
           M = s * P_l A Q_l                  [B, D1, D1]
           e_i <- e_i + M e_i for every token (query included)
  output:  pred = -E[:, n, d], loss = c * mean (pred - y_q)^2

Usage: /usr/bin/python3 tools/peers/icl_torch_baseline.py --setting ahn1 --steps 200
"""

import argparse
import sys
import time

import torch

import peer_env


# name -> (d, n, layers, batch, convention)
SETTINGS = {
    "ahn1": dict(d=5, n=20, layers=3, batch=1000, convention="ahn"),
    "vladymyrov": dict(d=10, n=20, layers=3, batch=2048, convention="vladymyrov"),
}

# convention -> scale s, loss factor c, noisy context labels, Adam lr, Adam betas, clip norm
CONVENTIONS = {
    "ahn": dict(s_is_inv_n=True, loss_factor=1.0, noise=False,
                lr=1e-2, betas=(0.9, 0.9), clip_norm=1.0, init_std=0.05),
    "vladymyrov": dict(s_is_inv_n=False, loss_factor=0.5, noise=True,
                       lr=1e-4, betas=(0.9, 0.999), clip_norm=None, init_std=0.01),
}

LOSS_READ_EVERY = 50  # read the loss to the host only this often, as rill does


class LinearTransformer(torch.nn.Module):
    """L linear-attention layers with one head each; P_l and Q_l are full D1 x D1 matrices."""

    def __init__(self, d, n, layers, scale, init_std):
        super().__init__()
        width = d + 1
        self.d = d
        self.n = n
        self.scale = scale
        self.P = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.randn(width, width) * init_std) for _ in range(layers)])
        self.Q = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.randn(width, width) * init_std) for _ in range(layers)])

    def forward(self, E):
        # E: [B, T, D1] -> pred: [B]
        for P, Q in zip(self.P, self.Q):
            ctx = E[:, : self.n, :]                      # [B, n, D1]
            A = ctx.transpose(1, 2) @ ctx                # [B, D1, D1] = sum_j e_j e_j^T
            M = self.scale * (P @ A @ Q)                 # [B, D1, D1]
            E = E + E @ M.transpose(1, 2)                # e_i += M e_i
        return -E[:, self.n, self.d]


def sample_tasks(d, n, batch, noise):
    """Fresh regression tasks: tokens E [B, n+1, d+1] and noise-free query targets y_q [B]."""
    x = torch.randn(batch, n + 1, d)                     # n context inputs + the query input
    w = torch.randn(batch, d)
    y = torch.einsum("btd,bd->bt", x, w)                 # [B, n+1] noise-free labels
    target = y[:, n].clone()
    labels = y[:, :n]
    if noise:
        sigma = torch.rand(batch, 1)                     # sigma ~ U(0, 1) per task
        labels = labels + sigma * torch.randn(batch, n)
    E = torch.zeros(batch, n + 1, d + 1)
    E[:, :, :d] = x
    E[:, :n, d] = labels                                 # the query's label slot stays 0
    return E, target


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", choices=sorted(SETTINGS), default="ahn1")
    parser.add_argument("--steps", type=int, default=200, help="timed training steps")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps before timing")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: the faster of one and every core)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=0,
                        help="print the loss to stderr every this many steps (0: never)")
    args = parser.parse_args()

    peer_env.configure()
    setting = SETTINGS[args.setting]
    d, n, layers, batch = setting["d"], setting["n"], setting["layers"], setting["batch"]

    def run():
        return train(setting, args.steps, args.warmup, args.seed, args.log_every)

    if args.threads is not None:
        torch.set_num_threads(args.threads)
        result = run() | {"threads": args.threads}
    else:
        result = peer_env.fastest(run, "seconds")
    print(peer_env.dumps({"impl": "pytorch-cpu",
                      **{k: v for k, v in peer_env.describe(torch.device("cpu")).items() if k != "threads"},
                      "threads": result["threads"], "setting": args.setting, "d": d, "n": n, "layers": layers,
                      "batch": batch, "steps": args.steps, **{k: v for k, v in result.items() if k != "threads"}}))


def train(setting, steps, warmup, seed, log_every):
    """Trains a fresh model for warmup + steps steps; the timed steps' figures."""
    torch.manual_seed(seed)
    conv = CONVENTIONS[setting["convention"]]
    d, n, layers, batch = setting["d"], setting["n"], setting["layers"], setting["batch"]
    scale = 1.0 / n if conv["s_is_inv_n"] else 1.0

    model = LinearTransformer(d, n, layers, scale, conv["init_std"])
    optimizer = torch.optim.Adam(model.parameters(), lr=conv["lr"], betas=conv["betas"])

    def train_step():
        E, target = sample_tasks(d, n, batch, conv["noise"])
        pred = model(E)
        loss = conv["loss_factor"] * torch.mean((pred - target) ** 2)
        loss.backward()
        if conv["clip_norm"] is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), conv["clip_norm"])
        optimizer.step()
        optimizer.zero_grad()
        return loss

    loss = None
    for _ in range(warmup):
        loss = train_step()

    final_loss = None
    start = time.perf_counter()
    for step in range(1, steps + 1):
        loss = train_step()
        if step % LOSS_READ_EVERY == 0 or step == steps:
            final_loss = loss.item()
        if log_every and (step == 1 or step % log_every == 0 or step == steps):
            print(f"step {step} loss {loss.item():.6f}", file=sys.stderr)
    seconds = time.perf_counter() - start
    if final_loss is None and loss is not None:
        final_loss = loss.item()
    return {"seconds": round(seconds, 4),
            "steps_per_s": round(steps / seconds, 3) if seconds > 0 else None,
            "tasks_per_s": round(steps * batch / seconds, 1) if seconds > 0 else None,
            "final_loss": final_loss}


if __name__ == "__main__":
    main()

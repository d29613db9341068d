"""Trains the demo model: a 3-block, hidden-256 H3 video DiT, by flow matching on drawn shapes.

    /usr/bin/python3 tools/train-demo/train.py --out /tmp/h3-shapes --steps 6000

Seeded and deterministic on one thread: the same arguments give the same weights. Writes, every
--every steps and at the end, <out>/h3-shapes.safetensors (the EMA weights in ComfyUI's H3 key names,
block linears and norms bf16, fp32 islands fp32) and <out>/state.pt (to resume with --resume), and logs
progress to <out>/train.log. evaluate.py then picks the sampler setting and writes the metadata.
"""

import argparse
import copy
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402
from h3_video import H3Config, H3Video, fp32_island, sample  # noqa: E402
from shapes import draw, ninodes_noise, shape_score  # noqa: E402


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--out', required=True)
    p.add_argument('--steps', type=int, default=6000)
    p.add_argument('--batch', type=int, default=16)
    p.add_argument('--size', type=int, default=16, help='latent height and width (1 frame)')
    p.add_argument('--lr', type=float, default=6e-4)
    p.add_argument('--warmup', type=int, default=200)
    p.add_argument('--decay-steps', type=int, default=0, help='decay the learning rate linearly over the last N steps')
    p.add_argument('--ema', type=float, default=0.999)
    p.add_argument('--seed', type=int, default=19)
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--every', type=int, default=100, help='checkpoint every N steps')
    p.add_argument('--score-every', type=int, default=500, help='log the shape score of the EMA weights every N steps')
    p.add_argument('--resume', action='store_true')
    return p.parse_args()


def lr_at(step, args):
    """Linear warm-up, constant, then over the last --decay-steps a linear decay to lr/20. Until the
    decay starts the weights do not depend on --steps, so a run can be continued (--resume) with a
    decay chosen later and land on the same weights as one run with those arguments."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    start = args.steps - args.decay_steps
    if args.decay_steps > 0 and step >= start:
        return args.lr * (1 - 0.95 * (step - start + 1) / args.decay_steps)
    return args.lr


def stored_tensors(model):
    """name -> (dtype, tensor) as the checkpoint stores them: fp32 islands F32, the rest BF16."""
    out = {}
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        out[name] = ('F32' if fp32_island(name) else 'BF16', t.detach())
    return out


def rounded_copy(model):
    """The model with its weights rounded to what the checkpoint stores (what ninodes will run)."""
    m = copy.deepcopy(model)
    with torch.no_grad():
        for name, (dtype, t) in stored_tensors(m).items():
            if dtype == 'BF16':
                t.copy_(st_io.bf16_round(t))
    return m


_NOISE = {}


def quick_score(model, size, steps, shift, seeds=64):
    """Shape score of `seeds` samples from ninodes' noise of seeds 0.. (the evaluation seeds)."""
    if (size, seeds) not in _NOISE:
        _NOISE[(size, seeds)] = torch.stack([ninodes_noise(s, [24, 1, size, size]) for s in range(seeds)])
    return shape_score(sample(model, _NOISE[(size, seeds)], steps, shift))


def main():
    args = parse()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    cfg = H3Config()
    model = H3Video(cfg)
    gen = torch.Generator().manual_seed(args.seed)
    model.init_weights(gen)
    ema = copy.deepcopy(model)
    for p in ema.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.99), weight_decay=0.0)
    data_gen = torch.Generator().manual_seed(args.seed + 1)
    start = 0
    state_path = os.path.join(args.out, 'state.pt')
    if args.resume and os.path.exists(state_path):
        st = torch.load(state_path)
        model.load_state_dict(st['model'])
        ema.load_state_dict(st['ema'])
        opt.load_state_dict(st['opt'])
        data_gen.set_state(st['data_gen'])
        torch.set_rng_state(st['torch_rng'])
        start = st['step']
    log = open(os.path.join(args.out, 'train.log'), 'a')

    def say(msg):
        line = f'{time.strftime("%H:%M:%S")} {msg}'
        log.write(line + '\n')
        log.flush()

    say(f'start step {start} of {args.steps}: {json.dumps(vars(args))}')
    t0 = time.time()
    running = 0.0
    for step in range(start, args.steps):
        for g in opt.param_groups:
            g['lr'] = lr_at(step, args)
        x0 = draw(args.batch, args.size, data_gen)
        eps = torch.randn(x0.shape, generator=data_gen)
        sigma = torch.rand(args.batch, generator=data_gen)
        s = sigma[:, None, None, None, None]
        xs = (1 - s) * x0 + s * eps
        loss = ((model(xs, sigma) - (eps - x0)) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        decay = min(args.ema, (1 + step) / (10 + step))
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters()):
                pe.mul_(decay).add_(pm, alpha=1 - decay)
        running = loss.item() if step == start else 0.98 * running + 0.02 * loss.item()
        if (step + 1) % 100 == 0:
            el = time.time() - t0
            say(f'step {step + 1} loss {running:.4f} lr {lr_at(step, args):.2e} {el / (step + 1 - start):.3f} s/step')
        if (step + 1) % args.every == 0 or step + 1 == args.steps:
            meta = {'format': 'pt', 'ninodes.h3_config': json.dumps(cfg.as_json()), 'ninodes.train_step': str(step + 1), 'ninodes.train_args': json.dumps(vars(args))}
            st_io.write(os.path.join(args.out, 'h3-shapes.safetensors'), stored_tensors(ema), meta)
            torch.save({'model': model.state_dict(), 'ema': ema.state_dict(), 'opt': opt.state_dict(), 'data_gen': data_gen.get_state(),
                        'torch_rng': torch.get_rng_state(), 'step': step + 1}, state_path + '.tmp')
            os.replace(state_path + '.tmp', state_path)
            say(f'checkpoint at step {step + 1}')
        if (step + 1) % args.score_every == 0:
            r = rounded_copy(ema)
            scores = {f'{n}@{sh}': quick_score(r, args.size, n, sh) for n, sh in [(20, 1.0), (10, 2.0)]}
            say(f'shape score at step {step + 1} (64 seeds, steps@shift): {json.dumps(scores)}')
    say(f'done in {time.time() - t0:.0f} s')


if __name__ == '__main__':
    main()

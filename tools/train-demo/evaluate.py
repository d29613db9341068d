"""Chooses the sampler setting of a trained checkpoint, scores it, and writes the committed files.

    /usr/bin/python3 tools/train-demo/evaluate.py --train /tmp/h3-shapes

1. Loads <train>/h3-shapes.safetensors as ninodes will run it (bf16 weights widened to fp32).
2. Sweeps (steps, shift) on 128 selection seeds (1000..1127) and keeps the setting with the highest
   shape score minus 0.002 per step (fewer steps break ties: the demo runs every format).
3. Scores that setting under PyTorch's own fp32 sampler on the 64 evaluation seeds 0..63, from
   ninodes' own starting noise (gaussianNoise(seed), ported in shapes.py), so ninodes' score on
   the same seeds is comparable.
4. Writes packages/models/weights/h3-shapes.safetensors (metadata ninodes.sampler, ninodes.train,
   ninodes.shape_score) and packages/models/fixtures/h3-shapes/expect.safetensors: float64 PyTorch
   samples of seeds 0..3 (the test's independent reference), and score-function cases (drawings,
   drawings plus noise, samples) with the per-sample palette fractions computed here.
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402
from h3_video import H3Config, H3Video, fp32_island, sample  # noqa: E402
from shapes import PASS_FRACTION, draw, ninodes_noise, shape_score, shape_score_per_sample  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SIZE = 16
STEPS = [16, 24, 32]
SHIFTS = [1.0, 2.0, 3.0]
SELECTION_SEEDS = range(1000, 1128)


def load(path, dtype):
    weights, meta = st_io.read(path)
    cfg = H3Config(**{k: v for k, v in zip(
        ['layers', 'hidden', 'heads', 'head_dim', 'ffn', 't_dim', 'time_hidden', 'freq_dim', 'rope_len', 'channels'],
        [json.loads(meta['ninodes.h3_config'])[k] for k in ['layers', 'hidden', 'heads', 'headDim', 'ffn', 'tDim', 'timeHidden', 'freqDim', 'ropeLen', 'latentChannels']])})
    model = H3Video(cfg).to(dtype)
    model.load_state_dict({k: v.to(dtype) for k, v in weights.items()})
    model.eval()
    return model, weights, meta


def train_args(train_dir, meta):
    """train.py's arguments: from the metadata, else from the last start line of train.log."""
    if 'ninodes.train_args' in meta:
        return json.loads(meta['ninodes.train_args'])
    starts = [line for line in open(os.path.join(train_dir, 'train.log')) if ' start step 0 of ' in line]
    return json.loads(starts[-1].split(': ', 1)[1])


def noise_for(seeds):
    return torch.stack([ninodes_noise(s, [24, 1, SIZE, SIZE]) for s in seeds])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--train', required=True, help='the --out directory of train.py')
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--steps', type=int, help='skip the sweep: use this many steps (with --shift)')
    p.add_argument('--shift', type=float)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    src = os.path.join(args.train, 'h3-shapes.safetensors')
    model, weights, meta = load(src, torch.float32)

    sweep = {}
    if args.steps is None:
        sel = noise_for(SELECTION_SEEDS)
        for n in STEPS:
            for sh in SHIFTS:
                sweep[f'{n}@{sh:g}'] = shape_score(sample(model, sel, n, sh))
                print(f'selection seeds: {n} steps, shift {sh:g}: {sweep[f"{n}@{sh:g}"]:.3f}', flush=True)
        best = max(sweep, key=lambda k: sweep[k] - 0.002 * int(k.split('@')[0]))
        steps, shift = int(best.split('@')[0]), float(best.split('@')[1])
    else:
        steps, shift = args.steps, args.shift

    ev = noise_for(range(64))
    samples = sample(model, ev, steps, shift)
    score = shape_score(samples)
    print(f'chosen: {steps} steps, shift {shift:g}; PyTorch fp32 shape score on seeds 0..63: {score:.3f}', flush=True)

    tensors = {name: ('F32' if fp32_island(name) else 'BF16', t) for name, t in weights.items()}
    out_meta = {
        'format': 'pt',
        'ninodes.h3_config': meta['ninodes.h3_config'],
        'ninodes.sampler': json.dumps({'steps': steps, 'shift': shift, 'frames': 1, 'height': SIZE, 'width': SIZE}),
        'ninodes.train': json.dumps({'tool': 'tools/train-demo/train.py', 'steps': int(meta['ninodes.train_step']), 'args': train_args(args.train, meta)}),
        'ninodes.shape_score': json.dumps({'pytorch_fp32': score, 'seeds': '0..63', 'sweep_on_seeds_1000..1127': sweep}),
    }
    wdir = os.path.join(ROOT, 'packages', 'models', 'weights')
    os.makedirs(wdir, exist_ok=True)
    st_io.write(os.path.join(wdir, 'h3-shapes.safetensors'), tensors, out_meta)

    # The test's independent reference: float64 PyTorch samples of seeds 0..3 from the same stored weights.
    m64, _, _ = load(src, torch.float64)
    ref = sample(m64, noise_for(range(4)), steps, shift, dtype=torch.float64)
    # Score-function cases: drawings (1.0), drawings with growing noise (in between), model samples.
    g = torch.Generator().manual_seed(7)
    drawings = draw(8, SIZE, g)[:, :3]
    noisy = drawings + torch.randn(drawings.shape, generator=g) * torch.linspace(0.0, 0.3, 8)[:, None, None, None, None]
    cases = torch.cat([drawings, noisy, samples[:16, :3]]).to(torch.float32)
    fractions = shape_score_per_sample(cases)
    fdir = os.path.join(ROOT, 'packages', 'models', 'fixtures', 'h3-shapes')
    os.makedirs(fdir, exist_ok=True)
    st_io.write(os.path.join(fdir, 'expect.safetensors'), {
        'sample_f64': ('F64', ref),
        'score_cases': ('F32', cases),
        'score_fractions': ('F64', fractions),
    }, {
        'producer': 'tools/train-demo/evaluate.py (PyTorch ' + torch.__version__ + ')',
        'sample_f64': f'float64 PyTorch flow-matching Euler, {steps} steps, shift {shift:g}, seeds 0..3, noise = gaussianNoise([1,24,1,{SIZE},{SIZE}], seed)',
        'score_cases': '8 drawings, the same 8 drawings plus noise of std 0..0.3, 16 fp32 samples; channels 0..2 only',
        'score_fractions': 'per case: fraction of pixels within 0.2 of a palette colour',
        'score_cases_score': str(float((fractions >= PASS_FRACTION).double().mean())),
    })
    print('wrote', os.path.join(wdir, 'h3-shapes.safetensors'), 'and', os.path.join(fdir, 'expect.safetensors'))


if __name__ == '__main__':
    main()

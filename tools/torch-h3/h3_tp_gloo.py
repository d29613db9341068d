"""One rank of the H3 video forward split over tensor-parallel ranks with torch.distributed (Gloo).

The bench's PyTorch + Gloo peer for the `tp` suite: the same Megatron split ninodes makes
(`packages/tp`, `packages/models/src/h3-layout.ts`) on the same checkpoint, in float32:
qkv by heads (each rank its heads' rows of q, k and v), fc1 by its slice of each of gate and up,
out_proj and fc2 by input columns (partial outputs summed with all_reduce), the adaLN projections
by output rows (the modulation rows concatenated with all_gather); norms, embedders and the output
head whole on every rank. Each rank loads the whole file through tools/torch-h3, keeps its slices
and drops the rest (its peak memory is not the point here; its step time is).

Started once per rank by the bench; speaks one JSON object per line on stdin/stdout:
  -> {"ready": true, "hash": <sha256 of the first velocity>}   (or {"missing": why} and exit 0)
  <- {"run": n}  -> {"seconds": s, "cpuSeconds": c}   n forwards, timed here (perf_counter) after a
                    barrier, and the CPU time of the whole process (every thread) they took
  <- {"quit": true}
Arguments: --rank R --world N --store DIR (an empty directory all ranks share) --checkpoint PATH
--latent RAWF32 --shape 1,C,T,H,W --sigma S [--threads 1] [--out RAWF32].
"""
import argparse
import hashlib
import json
import os
import sys
import time


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--latent", required=True)
    ap.add_argument("--shape", required=True)
    ap.add_argument("--sigma", type=float, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--out", help="write the first velocity here (raw f32), e.g. to check it against one rank")
    a = ap.parse_args()
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        say({"missing": f"torch is not importable by {sys.executable}: {e}"})
        return
    if not dist.is_available() or not dist.is_gloo_available():
        say({"missing": "this torch has no Gloo backend (torch.distributed)"})
        return
    sys.dont_write_bytecode = True
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import h3_torch
    why = h3_torch.unsupported()
    if why is not None:
        say({"missing": f"{why} ({sys.executable})"})
        return
    from datetime import timedelta

    torch.set_num_threads(a.threads)
    rank, world = a.rank, a.world
    dist.init_process_group("gloo", init_method=f"file://{os.path.join(a.store, 'torch-store')}", rank=rank, world_size=world, timeout=timedelta(seconds=a.timeout))

    class H3TorchTP(h3_torch.H3Torch):
        """This rank's slices of H3Torch's float32 weights and a block forward that reduces them."""

        def __init__(self, path):
            super().__init__(path, "f32")
            d, heads, hd = self.hidden, self.heads, self.head_dim
            if heads % world or (self.w["blocks.0.mlp.fc1.weight"].shape[0] // 2) % world:
                raise ValueError(f"{world} ranks do not split {heads} heads and the MLP evenly")
            self.local_heads = heads // world
            inner, ln = heads * hd, self.local_heads * hd

            def rows(t, spans):
                return torch.cat([t[s:e] for s, e in spans]).contiguous()

            for i in range(self.layers):
                p = f"blocks.{i}"
                self.w[f"{p}.attn.qkv_proj.weight"] = rows(self.w[f"{p}.attn.qkv_proj.weight"], [(j * inner + rank * ln, j * inner + (rank + 1) * ln) for j in range(3)])
                self.w[f"{p}.attn.out_proj.weight"] = self.w[f"{p}.attn.out_proj.weight"][:, rank * ln:(rank + 1) * ln].contiguous()
                fc1 = self.w[f"{p}.mlp.fc1.weight"]
                ffn = fc1.shape[0] // 2
                fl = ffn // world
                self.w[f"{p}.mlp.fc1.weight"] = rows(fc1, [(rank * fl, (rank + 1) * fl), (ffn + rank * fl, ffn + (rank + 1) * fl)])
                self.w[f"{p}.mlp.fc2.weight"] = self.w[f"{p}.mlp.fc2.weight"][:, rank * fl:(rank + 1) * fl].contiguous()
            for name in [f"blocks.{i}.adaln_proj.linear" for i in range(self.layers)] + ["final_layer.adaln_proj.linear"]:
                n = self.w[f"{name}.weight"].shape[0] // world
                self.w[f"{name}.weight"] = self.w[f"{name}.weight"][rank * n:(rank + 1) * n].contiguous()
                self.w[f"{name}.bias"] = self.w[f"{name}.bias"][rank * n:(rank + 1) * n].contiguous()

        def _linear(self, x, name, island=False):
            y = super()._linear(x, name, island)
            if name.endswith("adaln_proj.linear"):
                parts = [torch.empty_like(y) for _ in range(world)]
                dist.all_gather(parts, y.contiguous())
                return torch.cat(parts, dim=-1)
            return y

        def _row_linear(self, x, name):
            # This rank's partial sum over its input columns, summed over the ranks.
            partial = self._linear(x, name)
            dist.all_reduce(partial)
            return partial

    model = H3TorchTP(a.checkpoint)
    latent = h3_torch.read_f32(a.latent, [int(v) for v in a.shape.split(",")])
    first = model.forward(latent, a.sigma)
    if a.out:
        with open(a.out, "wb") as f:
            f.write(bytes(first.contiguous().untyped_storage()))
    say({"ready": True, "hash": hashlib.sha256(bytes(first.contiguous().untyped_storage())).hexdigest()})
    for line in sys.stdin:
        req = json.loads(line)
        if "run" not in req:
            break
        dist.barrier()
        c0 = time.process_time()
        t0 = time.perf_counter()
        for _ in range(int(req["run"])):
            model.forward(latent, a.sigma)
        say({"seconds": time.perf_counter() - t0, "cpuSeconds": time.process_time() - c0})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""ninodes bench peer: the same work through Python libraries, timed inside this process.

Protocol: one JSON object per line on stdin, one JSON reply per line on stdout.
  {"op": "probe"}                                   -> {"ok": true, "libs": {"torch": "2.x" | null, ...}, "python": "3.x"}
  {"op": "setup", "id": "j1", "kind": "torch.linear", "params": {...}}
                                                    -> {"ok": true} | {"ok": false, "missing": "why"} | {"ok": false, "error": "why"}
  {"op": "run", "id": "j1", "reps": 1}              -> {"ok": true, "seconds": 0.0123}   (total of reps runs)
  {"op": "free", "id": "j1"}                        -> {"ok": true}
A library that cannot be imported is reported as missing; nothing is ever substituted for it.
"""
import importlib
import json
import os
import sys
import time


def lib_version(name):
    try:
        mod = importlib.import_module(name)
    except Exception:
        return None
    return getattr(mod, "__version__", "unknown")


class Missing(Exception):
    pass


def need(name):
    try:
        return importlib.import_module(name)
    except Exception as exc:  # ImportError or a broken install: both mean "not usable here"
        raise Missing(f"python module {name!r} not importable: {exc}")


def set_threads(torch, params):
    threads = params.get("threads")
    if threads:
        torch.set_num_threads(int(threads))


def torch_dtype(torch, name):
    return {"float32": torch.float32, "f32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
            "float16": torch.float16, "f16": torch.float16}[name]


def setup_torch_linear(p):
    torch = need("torch")
    set_threads(torch, p)
    torch.manual_seed(0)
    dt = torch_dtype(torch, p.get("dtype", "float32"))
    x = torch.randn(int(p["m"]), int(p["k"]), dtype=dt)
    w = torch.randn(int(p["n"]), int(p["k"]), dtype=dt)
    b = torch.randn(int(p["n"]), dtype=dt) if p.get("bias", True) else None
    fn = torch.nn.functional.linear

    def run():
        with torch.inference_mode():
            fn(x, w, b)
    return run


def setup_torch_int_mm(p):
    torch = need("torch")
    set_threads(torch, p)
    if not hasattr(torch, "_int_mm"):
        raise Missing("torch._int_mm not in this torch build")
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-128, 128, (int(p["m"]), int(p["k"])), dtype=torch.int8, generator=g)
    b = torch.randint(-128, 128, (int(p["k"]), int(p["n"])), dtype=torch.int8, generator=g)

    def run():
        with torch.inference_mode():
            torch._int_mm(a, b)
    return run


def setup_torch_sdpa(p):
    torch = need("torch")
    set_threads(torch, p)
    torch.manual_seed(0)
    dt = torch_dtype(torch, p.get("dtype", "float32"))
    shape = (int(p.get("batch", 1)), int(p["heads"]), int(p["seq"]), int(p["dim"]))
    q, k, v = (torch.randn(*shape, dtype=dt) for _ in range(3))
    fn = torch.nn.functional.scaled_dot_product_attention

    def run():
        with torch.inference_mode():
            fn(q, k, v)
    return run


def setup_safetensors_load(p):
    need("safetensors")
    framework = p.get("framework", "numpy")
    if framework == "numpy":
        need("numpy")
        from safetensors.numpy import load_file
    else:
        need("torch")
        from safetensors.torch import load_file
    path = p["file"]

    def run():
        load_file(path)
    return run


def setup_torch_h3_step(p):
    """One H3 forward (a sampler step) through tools/torch-h3 on the bench's checkpoint and latent.

    params: checkpoint, latent (raw f32 file), shape [1,C,T,H,W], sigma, mode ('f32' | 'bf16'),
    threads; out (optional): write this mode's velocity there as raw f32; f64Out (optional): also
    run the float64 reference once and write it there (raw f64), freeing it afterwards.
    """
    torch = need("torch")
    set_threads(torch, p)
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools", "torch-h3")
    if not os.path.isfile(os.path.join(tool, "h3_torch.py")):
        raise Missing(f"tools/torch-h3/h3_torch.py not found beside the bench ({os.path.normpath(tool)})")
    if tool not in sys.path:
        sys.path.insert(0, tool)
    # No __pycache__ left in the source tree by a bench run.
    sys.dont_write_bytecode = True
    h3 = importlib.import_module("h3_torch")
    why = h3.unsupported()
    if why is not None:
        raise Missing(why)
    latent = h3.read_f32(p["latent"], [int(v) for v in p["shape"]])
    sigma = float(p["sigma"])
    if p.get("f64Out"):
        ref = h3.H3Torch(p["checkpoint"], "f64")
        with open(p["f64Out"], "wb") as f:
            f.write(bytes(ref.forward(latent, sigma).contiguous().untyped_storage()))
        del ref
    model = h3.H3Torch(p["checkpoint"], p.get("mode", "f32"))
    first = model.forward(latent, sigma)
    if p.get("out"):
        with open(p["out"], "wb") as f:
            f.write(bytes(first.to(torch.float32).contiguous().untyped_storage()))

    def run():
        model.forward(latent, sigma)
    return run


KINDS = {
    "torch.h3_step": setup_torch_h3_step,
    "torch.linear": setup_torch_linear,
    "torch.int_mm": setup_torch_int_mm,
    "torch.sdpa": setup_torch_sdpa,
    "safetensors.load": setup_safetensors_load,
}


def handle(msg, jobs):
    op = msg.get("op")
    if op == "probe":
        libs = {name: lib_version(name) for name in ("torch", "safetensors", "numpy")}
        threads = None
        if libs["torch"] is not None:
            threads = importlib.import_module("torch").get_num_threads()
        return {"ok": True, "libs": libs, "python": sys.version.split()[0], "torchThreads": threads, "kinds": sorted(KINDS)}
    if op == "setup":
        kind = msg.get("kind")
        if kind not in KINDS:
            return {"ok": False, "error": f"unknown job kind {kind!r}; known: {sorted(KINDS)}"}
        try:
            jobs[msg["id"]] = KINDS[kind](msg.get("params", {}))
        except Missing as exc:
            return {"ok": False, "missing": str(exc)}
        return {"ok": True}
    if op == "run":
        run = jobs.get(msg.get("id"))
        if run is None:
            return {"ok": False, "error": f"no job {msg.get('id')!r}"}
        reps = max(1, int(msg.get("reps", 1)))
        t0 = time.perf_counter()
        for _ in range(reps):
            run()
        return {"ok": True, "seconds": time.perf_counter() - t0}
    if op == "free":
        jobs.pop(msg.get("id"), None)
        return {"ok": True}
    return {"ok": False, "error": f"unknown op {op!r}"}


def main():
    jobs = {}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            reply = handle(json.loads(line), jobs)
        except Exception as exc:  # report, keep serving: one bad job must not kill the peer
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

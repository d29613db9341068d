// Float64 oracle of the MiniMax-H3 video forward and the flow-matching Euler sampler, written from
// the definitions (issue 6 and the facts of ComfyUI's comfy/ldm/minimax/model.py), sharing no code
// with the implementation under test: its own grid, patchify, time embedding, norms and attention.

export interface RefConfig {
  layers: number;
  hidden: number;
  heads: number;
  headDim: number;
  ffn: number;
  tDim: number;
  channels: number;
  ropeLen: number;
  eps: number;
  qkEps: number;
  finalEps: number;
  freqDim: number;
}

/** name -> float64 values (any stored dtype, widened exactly). */
export type RefWeights = (name: string) => Float64Array;

/** y[M,N] = x[M,K] · W[N,K]ᵀ + b */
export function refLinear(x: Float64Array, m: number, k: number, w: Float64Array, n: number, b?: Float64Array): Float64Array {
  if (w.length !== n * k) throw new Error(`refLinear: weight has ${w.length} values, expected ${n}x${k}`);
  const y = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = b ? (b[j] as number) : 0;
      const xo = i * k;
      const wo = j * k;
      for (let p = 0; p < k; p++) s += (x[xo + p] as number) * (w[wo + p] as number);
      y[i * n + j] = s;
    }
  }
  return y;
}

const silu = (v: number): number => v / (1 + Math.exp(-v));

/** RMS norm over the last dim d of rows. */
function refRms(x: Float64Array, d: number, w: Float64Array, eps: number): Float64Array {
  const out = new Float64Array(x.length);
  for (let r = 0; r < x.length / d; r++) {
    let ss = 0;
    for (let i = 0; i < d; i++) ss += (x[r * d + i] as number) ** 2;
    const inv = 1 / Math.sqrt(ss / d + eps);
    for (let i = 0; i < d; i++) out[r * d + i] = (x[r * d + i] as number) * inv * (w[i] as number);
  }
  return out;
}

/**
 * One DiTBlock: adaLN row 0 of 3 modality rows, 6 chunks (shift, scale, gate for attention then MLP).
 * angles [S, rot]: pair i rotates dims (i, i + rot/2) of each q/k head by angles[s, i].
 */
export function refBlock(w: RefWeights, p: string, cfg: RefConfig, x0: Float64Array, s: number, tEmb: Float64Array, angles: Float64Array, rot: number): Float64Array {
  const { hidden: d, heads, headDim: hd, ffn } = cfg;
  const inner = heads * hd;
  const mod = refLinear(tEmb.map(silu), 1, cfg.tDim, w(`${p}.adaln_proj.linear.weight`), 18 * d, w(`${p}.adaln_proj.linear.bias`));
  // row 0 of [3, 6·d]: the video modality
  const chunk = (c: number): Float64Array => mod.subarray(c * d, (c + 1) * d);
  const [shiftA, scaleA, gateA, shiftM, scaleM, gateM] = [0, 1, 2, 3, 4, 5].map(chunk) as Float64Array[];
  const modulate = (h: Float64Array, shift: Float64Array, scale: Float64Array): Float64Array =>
    h.map((v, i) => v * (1 + (scale[i % d] as number)) + (shift[i % d] as number));

  const x = Float64Array.from(x0);
  // attention
  const h1 = modulate(refRms(x, d, w(`${p}.norm1.weight`), cfg.eps), shiftA as Float64Array, scaleA as Float64Array);
  const qkv = refLinear(h1, s, d, w(`${p}.attn.qkv_proj.weight`), 3 * inner);
  const qw = w(`${p}.attn.q_norm.weight`);
  const kw = w(`${p}.attn.k_norm.weight`);
  const q = new Float64Array(s * inner);
  const k = new Float64Array(s * inner);
  const v = new Float64Array(s * inner);
  for (let t = 0; t < s; t++) {
    for (let c = 0; c < inner; c++) {
      q[t * inner + c] = qkv[t * 3 * inner + c] as number;
      k[t * inner + c] = qkv[t * 3 * inner + inner + c] as number;
      v[t * inner + c] = qkv[t * 3 * inner + 2 * inner + c] as number;
    }
  }
  const qn = refRms(q, hd, qw, cfg.qkEps);
  const kn = refRms(k, hd, kw, cfg.qkEps);
  const half = rot / 2;
  for (const buf of [qn, kn]) {
    for (let t = 0; t < s; t++) {
      for (let hh = 0; hh < heads; hh++) {
        const o = t * inner + hh * hd;
        for (let i = 0; i < half; i++) {
          const a = angles[t * rot + i] as number;
          const c = Math.cos(a);
          const sn = Math.sin(a);
          const x1 = buf[o + i] as number;
          const x2 = buf[o + i + half] as number;
          buf[o + i] = x1 * c - x2 * sn;
          buf[o + i + half] = x1 * sn + x2 * c;
        }
      }
    }
  }
  const att = new Float64Array(s * inner);
  const scale = 1 / Math.sqrt(hd);
  const logits = new Float64Array(s);
  for (let hh = 0; hh < heads; hh++) {
    for (let i = 0; i < s; i++) {
      let mx = -Infinity;
      for (let j = 0; j < s; j++) {
        let dot = 0;
        for (let c = 0; c < hd; c++) dot += (qn[i * inner + hh * hd + c] as number) * (kn[j * inner + hh * hd + c] as number);
        logits[j] = dot * scale;
        mx = Math.max(mx, dot * scale);
      }
      let z = 0;
      for (let j = 0; j < s; j++) {
        logits[j] = Math.exp((logits[j] as number) - mx);
        z += logits[j] as number;
      }
      for (let c = 0; c < hd; c++) {
        let acc = 0;
        for (let j = 0; j < s; j++) acc += (logits[j] as number) * (v[j * inner + hh * hd + c] as number);
        att[i * inner + hh * hd + c] = acc / z;
      }
    }
  }
  const ao = refLinear(att, s, inner, w(`${p}.attn.out_proj.weight`), d);
  for (let i = 0; i < x.length; i++) x[i] = (x[i] as number) + (ao[i] as number) * (gateA as Float64Array)[i % d]!;
  // MLP: fc1 -> [gate | up] -> silu(gate)·up -> fc2
  const h2 = modulate(refRms(x, d, w(`${p}.norm2.weight`), cfg.eps), shiftM as Float64Array, scaleM as Float64Array);
  const f1 = refLinear(h2, s, d, w(`${p}.mlp.fc1.weight`), 2 * ffn);
  const act = new Float64Array(s * ffn);
  for (let t = 0; t < s; t++) {
    for (let c = 0; c < ffn; c++) act[t * ffn + c] = silu(f1[t * 2 * ffn + c] as number) * (f1[t * 2 * ffn + ffn + c] as number);
  }
  const f2 = refLinear(act, s, ffn, w(`${p}.mlp.fc2.weight`), d);
  for (let i = 0; i < x.length; i++) x[i] = (x[i] as number) + (f2[i] as number) * (gateM as Float64Array)[i % d]!;
  return x;
}

/** Positions (t, h, w) of the video tokens of a [T, H, W] latent (H, W already even), frame-major. */
export function refVideoPositions(T: number, H: number, W: number): Float64Array {
  const hN = H / 2;
  const wN = W / 2;
  const side = Math.sqrt(H * W);
  const axis = (dim: number, n: number, i: number): number => {
    const ratio = dim / side;
    // n points on [(1-ratio)/2, (1+ratio)/2), endpoint excluded, scaled by 32
    return 32 * ((1 - ratio) / 2 + (ratio * i) / n);
  };
  const out = new Float64Array(T * hN * wN * 3);
  let tPos = 0;
  let r = 0;
  for (let f = 0; f < T; f++) {
    for (let i = 0; i < hN; i++) {
      for (let j = 0; j < wN; j++) {
        out[r * 3] = tPos;
        out[r * 3 + 1] = axis(H, hN, i);
        out[r * 3 + 2] = axis(W, wN, j);
        r++;
      }
    }
    tPos += (5 / 3) * (f % 5 === 0 ? 1 : 4);
  }
  return out;
}

/** angles[s] = [t·inv, h·inv, w·inv, t·inv, h·inv, w·inv] */
export function refAngles(pos: Float64Array, inv: Float64Array): Float64Array {
  const n = pos.length / 3;
  const L = inv.length;
  const rot = 6 * L;
  const out = new Float64Array(n * rot);
  for (let s = 0; s < n; s++) {
    for (let a = 0; a < 3; a++) {
      for (let l = 0; l < L; l++) {
        const v = (pos[s * 3 + a] as number) * (inv[l] as number);
        out[s * rot + a * L + l] = v;
        out[s * rot + 3 * L + a * L + l] = v;
      }
    }
  }
  return out;
}

/** Velocity of the whole video model at noise level sigma: latent [C, T, H, W] -> [C, T, H, W]. */
export function refForward(w: RefWeights, cfg: RefConfig, latent: Float64Array, T: number, H: number, W: number, sigma: number): Float64Array {
  const C = cfg.channels;
  const Hp = H + (H % 2);
  const Wp = W + (W % 2);
  const hN = Hp / 2;
  const wN = Wp / 2;
  const S = T * hN * wN;
  const P = C * 4;
  // circular padding to even H/W, then 1×2×2 patches; column = c·4 + dy·2 + dx
  const rows = new Float64Array(S * P);
  for (let f = 0; f < T; f++) {
    for (let i = 0; i < hN; i++) {
      for (let j = 0; j < wN; j++) {
        const r = (f * hN + i) * wN + j;
        for (let c = 0; c < C; c++) {
          for (let dy = 0; dy < 2; dy++) {
            for (let dx = 0; dx < 2; dx++) {
              const y = (2 * i + dy) % H;
              const x = (2 * j + dx) % W;
              rows[r * P + c * 4 + dy * 2 + dx] = latent[((c * T + f) * H + y) * W + x] as number;
            }
          }
        }
      }
    }
  }
  let x = refLinear(rows, S, P, w('video_patch_proj.weight'), cfg.hidden, w('video_patch_proj.bias'));

  const t = 1 - Math.max(sigma, 1e-6);
  const half = cfg.freqDim / 2;
  const emb = new Float64Array(cfg.freqDim);
  for (let j = 0; j < half; j++) {
    const f = Math.exp((-Math.log(10000) * j) / half);
    emb[j] = Math.cos(t * f);
    emb[half + j] = Math.sin(t * f);
  }
  const tHidden = w('time_embedder.proj_in.bias').length;
  const te1 = refLinear(emb, 1, cfg.freqDim, w('time_embedder.proj_in.weight'), tHidden, w('time_embedder.proj_in.bias')).map(silu);
  const tEmb = refLinear(te1, 1, tHidden, w('time_embedder.proj_out.weight'), cfg.tDim, w('time_embedder.proj_out.bias'));

  const angles = refAngles(refVideoPositions(T, Hp, Wp), w('rope.inv_freq'));
  for (let l = 0; l < cfg.layers; l++) x = refBlock(w, `blocks.${l}`, cfg, x, S, tEmb, angles, 6 * cfg.ropeLen);

  const d = cfg.hidden;
  const fm = refLinear(tEmb.map(silu), 1, cfg.tDim, w('final_layer.adaln_proj.linear.weight'), 2 * d, w('final_layer.adaln_proj.linear.bias'));
  const normed = refRms(x, d, w('final_layer.norm.weight'), cfg.finalEps);
  for (let i = 0; i < normed.length; i++) normed[i] = (normed[i] as number) * (1 + (fm[d + (i % d)] as number)) + (fm[i % d] as number);
  const head = refLinear(normed, S, d, w('final_layer.video_out.weight'), P, w('final_layer.video_out.bias'));

  const out = new Float64Array(C * T * H * W);
  for (let f = 0; f < T; f++) {
    for (let y = 0; y < H; y++) {
      for (let xx = 0; xx < W; xx++) {
        const r = (f * hN + (y >> 1)) * wN + (xx >> 1);
        for (let c = 0; c < C; c++) out[((c * T + f) * H + y) * W + xx] = -(head[r * P + c * 4 + (y & 1) * 2 + (xx & 1)] as number);
      }
    }
  }
  return out;
}

/** Flow-matching Euler: s_i = 1 − i/N, sigma_i = shift·s/(1 + (shift−1)·s), x += (sigma_{i+1} − sigma_i)·v. */
export function refSample(w: RefWeights, cfg: RefConfig, noise: Float64Array, T: number, H: number, W: number, steps: number, shift: number): Float64Array {
  const sig = (i: number): number => {
    const s = 1 - i / steps;
    return (shift * s) / (1 + (shift - 1) * s);
  };
  const x = Float64Array.from(noise);
  for (let i = 0; i < steps; i++) {
    const v = refForward(w, cfg, x, T, H, W, sig(i));
    const dt = sig(i + 1) - sig(i);
    for (let j = 0; j < x.length; j++) x[j] = (x[j] as number) + dt * (v[j] as number);
  }
  return x;
}

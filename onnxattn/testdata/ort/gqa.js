// gqa.js writes gqa.json: ONNX Runtime's CPU com.microsoft.GroupQueryAttention
// on float32 and float16 inputs, for TestGQAAgainstORT.
//
//   npm install --ignore-scripts onnxruntime-node@1.31.1
//   node gqa.js > gqa.json
//
// Each case builds a one-node model (onnx.js), feeds it inputs from a
// fixed-seed generator, and records the inputs, the attributes and what
// ONNX Runtime returned: output, and of present_key and present_value the
// new rows (the generator checks that the others are the past's).
"use strict";
const ort = require("onnxruntime-node");
const { str, msg, valueInfo, attrInt, attrFloat, rng, f32s, model, FLOAT, FLOAT16, INT32 } = require("./onnx.js");

// f16bits rounds a float32 value to the nearest float16 (ties to even) and
// returns its bits; f16value returns the value of float16 bits.
function f16bits(x) {
  const dv = new DataView(new ArrayBuffer(4));
  dv.setFloat32(0, x);
  const u = dv.getUint32(0);
  const sign = (u >>> 16) & 0x8000;
  const e = (u >>> 23) & 0xff;
  let m = u & 0x7fffff;
  if (e === 0xff) return sign | 0x7c00 | (m ? 0x200 : 0);
  const ex = e - 127 + 15;
  if (ex >= 0x1f) return sign | 0x7c00;
  let shift = 13, h = (ex << 10) | (m >>> 13);
  if (ex <= 0) {
    if (ex < -10) return sign;
    m |= 0x800000;
    shift = 14 - ex;
    h = m >>> shift;
  }
  const rem = m & ((1 << shift) - 1), half = 1 << (shift - 1);
  if (rem > half || (rem === half && (h & 1))) h++; // a carry into the exponent is right
  return sign | h;
}
function f16value(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >>> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

async function run(c) {
  const { B, S, H, Hkv, D } = c;
  const P = c.P || 0; // past buffer length (0: no past, the prompt)
  const r = rng(c.seed);
  // Float16 cases draw the same way and round each value to float16, so
  // that every input is a float32 value float16 holds exactly.
  const round = c.f16 ? (x) => f16value(f16bits(x)) : (x) => x;
  const uni = (n, amp) => Float32Array.from({ length: n }, () => round((2 * r() - 1) * amp));
  const FT = c.f16 ? FLOAT16 : FLOAT;
  const tensor = (x, dims) => c.f16 ? new ort.Tensor("float16", Uint16Array.from(x, f16bits), dims) : new ort.Tensor("float32", x, dims);
  const values = (x) => c.f16 ? Float32Array.from(x, f16value) : x; // ONNX Runtime's outputs as float32
  const seqlens = Int32Array.from(c.seqlens);
  const total = c.total;
  const packed = !!c.packed;
  const qw = packed ? (H + 2 * Hkv) * D : H * D;
  const q = uni(B * S * qw, 1);
  const k = packed ? null : uni(B * S * Hkv * D, 1);
  const v = packed ? null : uni(B * S * Hkv * D, 1);
  const pk = P ? uni(B * Hkv * P * D, 1) : null;
  const pv = P ? uni(B * Hkv * P * D, 1) : null;
  let cos = null, sin = null;
  const rd = c.rd || D;
  if (c.rotary) {
    const maxPos = c.maxPos;
    cos = new Float32Array(maxPos * rd / 2);
    sin = new Float32Array(maxPos * rd / 2);
    for (let p = 0; p < maxPos; p++) {
      for (let i = 0; i < rd / 2; i++) {
        const a = p * Math.pow(10000, -2 * i / rd);
        cos[p * rd / 2 + i] = round(Math.cos(a));
        sin[p * rd / 2 + i] = round(Math.sin(a));
      }
    }
  }
  const sink = c.sink ? uni(H, 2) : null;
  const biasShape = c.bias ? [c.bias[0], c.bias[1], S, total] : null;
  const bias = c.bias ? uni(biasShape.reduce((a, b) => a * b, 1), 2) : null;
  const names = [
    "query", packed ? "" : "key", packed ? "" : "value", P ? "past_key" : "", P ? "past_value" : "",
    "seqlens_k", "total_sequence_length", c.rotary ? "cos_cache" : "", c.rotary ? "sin_cache" : "",
    "", bias ? "attention_bias" : "", sink ? "head_sink" : "",
  ];
  while (names[names.length - 1] === "") names.pop();
  const attrs = [attrInt("num_heads", H), attrInt("kv_num_heads", Hkv)];
  if (c.rotary) attrs.push(attrInt("do_rotary", 1), attrInt("rotary_interleaved", c.interleaved ? 1 : 0));
  if (c.scale) attrs.push(attrFloat("scale", c.scale));
  if (c.softcap) attrs.push(attrFloat("softcap", c.softcap));
  if (c.window !== undefined) attrs.push(attrInt("local_window_size", c.window));
  if (c.smooth) attrs.push(attrInt("smooth_softmax", 1));
  const graph = [
    msg(1, [
      ...names.map((n) => str(1, n)),
      ...["output", "present_key", "present_value"].map((n) => str(2, n)),
      str(3, "gqa"), str(4, "GroupQueryAttention"), str(7, "com.microsoft"), ...attrs,
    ]),
    str(2, "g"),
    valueInfo(11, "query", FT, [B, S, qw]),
    ...(packed ? [] : [valueInfo(11, "key", FT, [B, S, Hkv * D]), valueInfo(11, "value", FT, [B, S, Hkv * D])]),
    ...(P ? [valueInfo(11, "past_key", FT, [B, Hkv, P, D]), valueInfo(11, "past_value", FT, [B, Hkv, P, D])] : []),
    valueInfo(11, "seqlens_k", INT32, [B]),
    valueInfo(11, "total_sequence_length", INT32, []),
    ...(c.rotary ? [valueInfo(11, "cos_cache", FT, [c.maxPos, rd / 2]), valueInfo(11, "sin_cache", FT, [c.maxPos, rd / 2])] : []),
    ...(bias ? [valueInfo(11, "attention_bias", FT, biasShape)] : []),
    ...(sink ? [valueInfo(11, "head_sink", FT, [H])] : []),
    valueInfo(12, "output", FT, [B, S, H * D]),
    valueInfo(12, "present_key", FT, [B, Hkv, "T", D]),
    valueInfo(12, "present_value", FT, [B, Hkv, "T", D]),
  ];
  const sess = await ort.InferenceSession.create(model(graph), { intraOpNumThreads: 1 });
  const feeds = {
    query: tensor(q, [B, S, qw]),
    seqlens_k: new ort.Tensor("int32", seqlens, [B]),
    total_sequence_length: new ort.Tensor("int32", Int32Array.of(total), []),
  };
  if (!packed) {
    feeds.key = tensor(k, [B, S, Hkv * D]);
    feeds.value = tensor(v, [B, S, Hkv * D]);
  }
  if (P) {
    feeds.past_key = tensor(pk, [B, Hkv, P, D]);
    feeds.past_value = tensor(pv, [B, Hkv, P, D]);
  }
  if (c.rotary) {
    feeds.cos_cache = tensor(cos, [c.maxPos, rd / 2]);
    feeds.sin_cache = tensor(sin, [c.maxPos, rd / 2]);
  }
  if (sink) feeds.head_sink = tensor(sink, [H]);
  if (bias) feeds.attention_bias = tensor(bias, biasShape);
  const res = await sess.run(feeds);
  // present_key/present_value hold the past rows each entry keeps and the
  // new rows after them (the rows after those are unspecified): the past
  // rows are checked here, so that only the new rows need recording.
  const T = res.present_key.dims[2];
  const presentNew = (pres, past, fresh) => {
    const rows = [];
    for (let b = 0; b < B; b++) {
      const pb = total === S ? 0 : seqlens[b] + 1 - S; // a first prompt: every row, padding too
      for (let h = 0; h < Hkv; h++) {
        for (let t = 0; t < T; t++) {
          const row = pres.slice(((b * Hkv + h) * T + t) * D, ((b * Hkv + h) * T + t + 1) * D);
          if (t >= pb && t < pb + S) {
            rows.push(...row);
            continue;
          }
          if (t >= pb) continue; // past the entry's rows: unspecified (a new buffer's, here)
          const want = past && t < P ? past.slice(((b * Hkv + h) * P + t) * D, ((b * Hkv + h) * P + t + 1) * D) : null;
          if (want && row.some((x, i) => x !== want[i])) throw new Error(c.name + ": present row " + t + " is not the past's");
        }
      }
    }
    return rows;
  };
  const newKeys = presentNew(values(res.present_key.data), pk, k);
  const newValues = presentNew(values(res.present_value.data), pv, v);
  const out = {
    name: c.name, f16: !!c.f16, B, S, H, Hkv, D, P, total, seqlens: [...seqlens], packed,
    rotary: !!c.rotary, interleaved: !!c.interleaved, scale: c.scale || 0, softcap: c.softcap || 0,
    window: c.window === undefined ? -1 : c.window, smooth: !!c.smooth,
    query: f32s(q), presentShape: res.present_key.dims,
    output: f32s(values(res.output.data)), presentNewKeys: f32s(newKeys), presentNewValues: f32s(newValues),
  };
  if (!packed) Object.assign(out, { key: f32s(k), value: f32s(v) });
  if (P) Object.assign(out, { pastKey: f32s(pk), pastValue: f32s(pv) });
  if (c.rotary) Object.assign(out, { cos: f32s(cos), sin: f32s(sin), rotaryDim: rd });
  if (sink) out.headSink = f32s(sink);
  if (bias) Object.assign(out, { bias: f32s(bias), biasShape });
  return out;
}

const cases = [
  { name: "token/gqa4/d64/ragged", B: 2, S: 1, P: 10, H: 8, Hkv: 2, D: 64, seqlens: [6, 9], total: 10, seed: 1 },
  { name: "token/mha/d128/rotary-half", B: 1, S: 1, P: 12, H: 4, Hkv: 4, D: 128, seqlens: [12], total: 13, rotary: true, maxPos: 32, seed: 2 },
  { name: "token/gqa2/d80/rotary-interleaved/ragged", B: 2, S: 1, P: 9, H: 4, Hkv: 2, D: 80, seqlens: [4, 8], total: 9, rotary: true, interleaved: true, maxPos: 16, seed: 3 },
  { name: "prompt/gqa2/d64/rotary/softcap", B: 1, S: 5, H: 4, Hkv: 2, D: 64, seqlens: [4], total: 5, rotary: true, maxPos: 8, softcap: 2, seed: 4 },
  { name: "verify3/gqa4/d64/window", B: 1, S: 3, P: 14, H: 8, Hkv: 2, D: 64, seqlens: [13], total: 14, window: 4, seed: 5 },
  { name: "token/gqa4/d128/smooth-softmax", B: 1, S: 1, P: 20, H: 4, Hkv: 1, D: 128, seqlens: [20], total: 21, smooth: true, seed: 6 },
  { name: "token/gqa2/d64/head-sink", B: 1, S: 1, P: 6, H: 4, Hkv: 2, D: 64, seqlens: [6], total: 7, sink: true, seed: 7 },
  { name: "token/gqa2/d64/shared-buffer", B: 2, S: 1, P: 16, H: 4, Hkv: 2, D: 64, seqlens: [3, 7], total: 8, seed: 8 },
  { name: "token/gqa2/d128/partial-rotary/scale", B: 1, S: 2, P: 10, H: 4, Hkv: 2, D: 128, seqlens: [11], total: 12, rotary: true, rd: 64, maxPos: 16, scale: 0.05, seed: 9 },
  { name: "verify2/gqa2/d64/bias-per-head/softcap", B: 1, S: 2, P: 9, H: 4, Hkv: 2, D: 64, seqlens: [8], total: 9, bias: [1, 4], softcap: 1.5, seed: 11 },
  { name: "token/gqa4/d64/bias-broadcast/ragged", B: 2, S: 1, P: 7, H: 8, Hkv: 2, D: 64, seqlens: [4, 6], total: 7, bias: [2, 1], seed: 12 },
  { name: "token/gqa2/d64/packed-qkv/rotary", B: 2, S: 1, P: 8, H: 4, Hkv: 2, D: 64, seqlens: [5, 7], total: 8, rotary: true, maxPos: 8, packed: true, seed: 10 },
  { name: "f16/token/gqa4/d128/rotary-half/ragged", f16: true, B: 2, S: 1, P: 12, H: 8, Hkv: 2, D: 128, seqlens: [7, 11], total: 12, rotary: true, maxPos: 16, seed: 13 },
  { name: "f16/prompt/gqa2/d64/rotary-interleaved/softcap", f16: true, B: 1, S: 5, H: 4, Hkv: 2, D: 64, seqlens: [4], total: 5, rotary: true, interleaved: true, maxPos: 8, softcap: 2, seed: 14 },
  { name: "f16/verify3/gqa2/d80/window", f16: true, B: 1, S: 3, P: 14, H: 4, Hkv: 2, D: 80, seqlens: [13], total: 14, window: 4, seed: 15 },
  { name: "prompt/gqa2/d64/padded/rotary", B: 3, S: 5, H: 4, Hkv: 2, D: 64, seqlens: [4, 2, 0], total: 5, rotary: true, maxPos: 8, seed: 16 },
  { name: "prompt/gqa4/d128/padded/window/bias/softcap", B: 2, S: 6, H: 8, Hkv: 2, D: 128, seqlens: [5, 2], total: 6, window: 2, bias: [2, 1], softcap: 1.5, seed: 17 },
  { name: "prompt/gqa2/d64/padded/window/head-sink", B: 2, S: 4, H: 4, Hkv: 2, D: 64, seqlens: [3, 0], total: 4, window: 1, sink: true, seed: 18 },
  { name: "prompt/gqa2/d64/padded/window", B: 2, S: 6, H: 4, Hkv: 2, D: 64, seqlens: [5, 2], total: 6, window: 2, seed: 19 },
  { name: "prompt/gqa2/d64/padded/static-buffer", B: 2, S: 4, P: 8, H: 4, Hkv: 2, D: 64, seqlens: [3, 1], total: 4, seed: 20 },
];

(async () => {
  const out = [];
  for (const c of cases) out.push(await run(c));
  process.stdout.write(JSON.stringify({ generator: "onnxattn/testdata/ort/gqa.js", onnxruntime: ort.env.versions.node, cases: out }) + "\n");
})().catch((e) => {
  console.error(e);
  process.exit(1);
});

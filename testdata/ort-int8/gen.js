// gen.js writes cases.json: ONNX Runtime's CPU GroupQueryAttention over an
// int8 KV cache with static scales (k_quant_type / v_quant_type PER_TENSOR
// or PER_CHANNEL, kv_cache_bit_width 8), for TestORTInt8Cache.
//
//   npm install --ignore-scripts onnxruntime-node@1.31.1
//   node gen.js > cases.json
//
// Each case builds a one-node model (the ONNX protobuf written below by
// hand in ../../onnxattn/testdata/ort/onnx.js, no other dependency), feeds it random float32 queries and new
// key/value rows and a random int8 past, and records the inputs, the
// present_key/present_value int8 rows ONNX Runtime wrote and its output.
"use strict";
const ort = require("onnxruntime-node");

const { int, str, msg, valueInfo, attrInt, attrFloat, attrStr, rng, f32s, model, FLOAT, INT8, INT32 } =
  require("../../onnxattn/testdata/ort/onnx.js");

async function run(c) {
  const { B, S, P, H, Hkv, D } = c;
  const T = P + S;
  const r = rng(c.seed);
  const uni = (n, amp) => Float32Array.from({ length: n }, () => (2 * r() - 1) * amp);
  const q = uni(B * S * H * D, 1);
  const k = uni(B * S * Hkv * D, c.kAmp);
  const v = uni(B * S * Hkv * D, c.vAmp);
  const pk = Int8Array.from({ length: B * Hkv * P * D }, () => Math.floor(r() * 256) - 128);
  const pv = Int8Array.from({ length: B * Hkv * P * D }, () => Math.floor(r() * 256) - 128);
  const scales = (kind, amp) =>
    kind === "PER_TENSOR"
      ? Float32Array.of(amp / 127)
      : Float32Array.from({ length: Hkv * D }, () => (amp / 127) * (0.25 + r()));
  let ks = scales(c.kq, c.kAmp), vs = scales(c.vq, c.vAmp);
  if (c.ties) {
    // Power-of-two scales and elements halfway between two steps (and
    // past the range): the rounding and clamping of the quantiser.
    ks = ks.map(() => 1 / 64);
    vs = vs.map(() => 1 / 32);
    for (let i = 0; i < k.length; i += 3) k[i] = (Math.floor(r() * 300) - 150 + 0.5) / 64;
    for (let i = 0; i < v.length; i += 5) v[i] = (Math.floor(r() * 300) - 150 + 0.5) / 32;
  }
  const graph = [
    msg(1, [
      ...["query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length",
        "", "", "", "", "", "k_scale", "v_scale"].map((n) => str(1, n)),
      ...["output", "present_key", "present_value"].map((n) => str(2, n)),
      str(3, "gqa"), str(4, "GroupQueryAttention"), str(7, "com.microsoft"),
      attrInt("num_heads", H), attrInt("kv_num_heads", Hkv),
      attrStr("k_quant_type", c.kq), attrStr("v_quant_type", c.vq), attrInt("kv_cache_bit_width", 8),
      ...(c.scale ? [attrFloat("scale", c.scale)] : []),
    ]),
    str(2, "g"),
    valueInfo(11, "query", FLOAT, [B, S, H * D]),
    valueInfo(11, "key", FLOAT, [B, S, Hkv * D]),
    valueInfo(11, "value", FLOAT, [B, S, Hkv * D]),
    valueInfo(11, "past_key", INT8, [B, Hkv, P, D]),
    valueInfo(11, "past_value", INT8, [B, Hkv, P, D]),
    valueInfo(11, "seqlens_k", INT32, [B]),
    valueInfo(11, "total_sequence_length", INT32, []),
    valueInfo(11, "k_scale", FLOAT, [ks.length]),
    valueInfo(11, "v_scale", FLOAT, [vs.length]),
    valueInfo(12, "output", FLOAT, [B, S, H * D]),
    valueInfo(12, "present_key", INT8, [B, Hkv, "T", D]),
    valueInfo(12, "present_value", INT8, [B, Hkv, "T", D]),
  ];
  const sess = await ort.InferenceSession.create(model(graph), { intraOpNumThreads: 1 });
  const feeds = {
    query: new ort.Tensor("float32", q, [B, S, H * D]),
    key: new ort.Tensor("float32", k, [B, S, Hkv * D]),
    value: new ort.Tensor("float32", v, [B, S, Hkv * D]),
    past_key: new ort.Tensor("int8", pk, [B, Hkv, P, D]),
    past_value: new ort.Tensor("int8", pv, [B, Hkv, P, D]),
    seqlens_k: new ort.Tensor("int32", Int32Array.from({ length: B }, () => T - 1), [B]),
    total_sequence_length: new ort.Tensor("int32", Int32Array.of(T), []),
    k_scale: new ort.Tensor("float32", ks, [ks.length]),
    v_scale: new ort.Tensor("float32", vs, [vs.length]),
  };
  const res = await sess.run(feeds);
  return {
    name: c.name, B, S, P, H, Hkv, D, scale: c.scale || 0, kQuant: c.kq, vQuant: c.vq,
    query: f32s(q), key: f32s(k), value: f32s(v), pastKey: [...pk], pastValue: [...pv],
    kScale: f32s(ks), vScale: f32s(vs),
    output: f32s(res.output.data), presentKey: [...res.present_key.data], presentValue: [...res.present_value.data],
  };
}

const cases = [
  { name: "per-tensor/d64/gqa", B: 1, S: 1, P: 7, H: 4, Hkv: 2, D: 64, kq: "PER_TENSOR", vq: "PER_TENSOR", kAmp: 2, vAmp: 3, seed: 1 },
  { name: "per-channel/d128/b2", B: 2, S: 1, P: 9, H: 8, Hkv: 2, D: 128, kq: "PER_CHANNEL", vq: "PER_CHANNEL", kAmp: 2, vAmp: 3, seed: 2 },
  { name: "per-channel/d80/s3", B: 1, S: 3, P: 5, H: 4, Hkv: 4, D: 80, kq: "PER_CHANNEL", vq: "PER_CHANNEL", kAmp: 4, vAmp: 1, seed: 3 },
  { name: "per-tensor/d64/s2/scale", B: 1, S: 2, P: 6, H: 6, Hkv: 3, D: 64, kq: "PER_TENSOR", vq: "PER_TENSOR", kAmp: 1, vAmp: 2, scale: 0.3, seed: 4 },
  { name: "ties-and-clamps/per-tensor/d32", B: 1, S: 4, P: 3, H: 2, Hkv: 1, D: 32, kq: "PER_TENSOR", vq: "PER_TENSOR", kAmp: 3, vAmp: 6, ties: true, seed: 5 },
  { name: "ties-and-clamps/per-channel/d32", B: 1, S: 2, P: 4, H: 4, Hkv: 2, D: 32, kq: "PER_CHANNEL", vq: "PER_CHANNEL", kAmp: 3, vAmp: 6, ties: true, seed: 6 },
];

(async () => {
  const out = [];
  for (const c of cases) out.push(await run(c));
  process.stdout.write(JSON.stringify({
    generator: "testdata/ort-int8/gen.js", onnxruntime: ort.env.versions.node, cases: out,
  }) + "\n");
})().catch((e) => {
  console.error(e);
  process.exit(1);
});

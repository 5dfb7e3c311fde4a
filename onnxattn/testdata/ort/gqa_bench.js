// gqa_bench.js times ONNX Runtime's CPU GroupQueryAttention on the shape of
// onnxattn's BenchmarkGQA: the token phase, 32 query heads on 8 KV heads
// of 128, 4096 past keys in a static buffer of 4097 rows, float32, rotary.
//
//   node gqa_bench.js [threads] [runs]
//
// It prints the median and the quartiles of a run's time over the runs
// (after 20 to warm up). onnxruntime-node binds no output buffer to an
// input, so present_key and present_value are new buffers each run, the
// past copied into them: ONNX Runtime's cost as a Node program sees it.
"use strict";
const ort = require("onnxruntime-node");
const { str, msg, valueInfo, attrInt, rng, model, FLOAT, INT32 } = require("./onnx.js");

(async () => {
  const threads = +(process.argv[2] || 1), runs = +(process.argv[3] || 200);
  const B = 1, S = 1, H = 32, Hkv = 8, D = 128, past = 4096, T = past + 1;
  const r = rng(1);
  const uni = (n) => Float32Array.from({ length: n }, () => 2 * r() - 1);
  const cos = new Float32Array(T * D / 2), sin = new Float32Array(T * D / 2);
  for (let p = 0; p < T; p++) {
    for (let i = 0; i < D / 2; i++) {
      const a = p * Math.pow(10000, -2 * i / D);
      cos[p * D / 2 + i] = Math.cos(a);
      sin[p * D / 2 + i] = Math.sin(a);
    }
  }
  const graph = [
    msg(1, [
      ...["query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"].map((n) => str(1, n)),
      ...["output", "present_key", "present_value"].map((n) => str(2, n)),
      str(3, "gqa"), str(4, "GroupQueryAttention"), str(7, "com.microsoft"),
      attrInt("num_heads", H), attrInt("kv_num_heads", Hkv), attrInt("do_rotary", 1),
    ]),
    str(2, "g"),
    valueInfo(11, "query", FLOAT, [B, S, H * D]),
    valueInfo(11, "key", FLOAT, [B, S, Hkv * D]),
    valueInfo(11, "value", FLOAT, [B, S, Hkv * D]),
    valueInfo(11, "past_key", FLOAT, [B, Hkv, T, D]),
    valueInfo(11, "past_value", FLOAT, [B, Hkv, T, D]),
    valueInfo(11, "seqlens_k", INT32, [B]),
    valueInfo(11, "total_sequence_length", INT32, []),
    valueInfo(11, "cos_cache", FLOAT, [T, D / 2]),
    valueInfo(11, "sin_cache", FLOAT, [T, D / 2]),
    valueInfo(12, "output", FLOAT, [B, S, H * D]),
    valueInfo(12, "present_key", FLOAT, [B, Hkv, T, D]),
    valueInfo(12, "present_value", FLOAT, [B, Hkv, T, D]),
  ];
  const sess = await ort.InferenceSession.create(model(graph), { intraOpNumThreads: threads, interOpNumThreads: 1 });
  const feeds = {
    query: new ort.Tensor("float32", uni(H * D), [B, S, H * D]),
    key: new ort.Tensor("float32", uni(Hkv * D), [B, S, Hkv * D]),
    value: new ort.Tensor("float32", uni(Hkv * D), [B, S, Hkv * D]),
    past_key: new ort.Tensor("float32", uni(Hkv * T * D), [B, Hkv, T, D]),
    past_value: new ort.Tensor("float32", uni(Hkv * T * D), [B, Hkv, T, D]),
    seqlens_k: new ort.Tensor("int32", Int32Array.of(past), [B]),
    total_sequence_length: new ort.Tensor("int32", Int32Array.of(T), []),
    cos_cache: new ort.Tensor("float32", cos, [T, D / 2]),
    sin_cache: new ort.Tensor("float32", sin, [T, D / 2]),
  };
  for (let i = 0; i < 20; i++) await sess.run(feeds);
  const ts = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await sess.run(feeds);
    ts.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  ts.sort((a, b) => a - b);
  const q = (f) => ts[Math.floor(f * (ts.length - 1))].toFixed(0);
  console.log(`threads=${threads} runs=${runs} median ${q(0.5)} µs (quartiles ${q(0.25)}-${q(0.75)})`);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});

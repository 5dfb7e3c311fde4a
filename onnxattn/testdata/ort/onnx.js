// onnx.js: what the ONNX Runtime case generators share: a protobuf writer
// for one-node ONNX models (no dependency but onnxruntime-node), a
// fixed-seed random generator, and float32 printing.
"use strict";

// A minimal protobuf writer: varints, length-delimited fields, fixed32.
function varint(n) {
  const out = [];
  let v = BigInt.asUintN(64, BigInt(n));
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) b |= 0x80;
    out.push(b);
  } while (v !== 0n);
  return out;
}
const key = (field, wire) => varint((field << 3) | wire);
const int = (field, n) => [...key(field, 0), ...varint(n)];
const bytes = (field, b) => [...key(field, 2), ...varint(b.length), ...b];
const str = (field, s) => bytes(field, [...Buffer.from(s, "utf8")]);
const msg = (field, parts) => bytes(field, parts.flat());
function f32(field, x) {
  const b = Buffer.alloc(4);
  b.writeFloatLE(x);
  return [...key(field, 5), ...b];
}

const FLOAT = 1, INT8 = 3, INT32 = 6, FLOAT16 = 10;
// ValueInfoProto: name, TypeProto{tensor_type{elem_type, shape{dim*}}}.
// A dimension given as a string is symbolic (dim_param).
function valueInfo(field, name, elem, dims) {
  const shape = dims.map((d) => msg(1, [typeof d === "string" ? str(2, d) : int(1, d)]));
  return msg(field, [str(1, name), msg(2, [msg(1, [int(1, elem), msg(2, shape)])])]);
}
// AttributeProto: name, then i (type INT 2), f (FLOAT 1) or s (STRING 3).
const attrInt = (name, v) => msg(5, [str(1, name), int(3, v), int(20, 2)]);
const attrFloat = (name, v) => msg(5, [str(1, name), f32(2, v), int(20, 1)]);
const attrStr = (name, v) => msg(5, [str(1, name), str(4, v), int(20, 3)]);

// mulberry32: the same stream on every run.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// f32s writes float32 values as the shortest decimals that read back as
// the same float32.
function f32s(xs) {
  return [...xs].map((x) => {
    for (let p = 1; p <= 9; p++) {
      const t = Number(x.toPrecision(p));
      if (Math.fround(t) === x) return t;
    }
    return x;
  });
}


// model returns the bytes of a model of one graph (built from the parts
// above) importing the default domain at opset 21 and com.microsoft 1.
function model(graph) {
  return Uint8Array.from([
    ...int(1, 10),
    ...msg(8, [str(1, ""), int(2, 21)]),
    ...msg(8, [str(1, "com.microsoft"), int(2, 1)]),
    ...msg(7, graph),
  ]);
}

module.exports = { int, bytes, str, msg, f32, valueInfo, attrInt, attrFloat, attrStr, rng, f32s, model, FLOAT, INT8, INT32, FLOAT16 };

//===- SymbolicDimsTest.cpp - One compile, many sizes ---------------------===//
//
// Graphs whose dims are symbols (GraphBuilder::symbol, the JSON format's
// named dims with --dim), leading or after fixed dims: each is compiled once
// and run at several sizes in its range, each run checked against the same
// graph compiled unfused for that exact size on the CPU. The kernels must not
// be compiled again for a new size, sizes outside a range and ops that cannot
// take symbolic dims yet must be clear errors. Every check is a function of the
// Target: the CPU case and the [gpu] one run the same code.
//
//===----------------------------------------------------------------------===//

#include "test/unit/TestUtil.h"

#include "runtime/SymbolicExecutable.h"
#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <set>

using namespace fusec;

namespace {

/// The graph with its symbolic inputs at `sizes` (one per symbol), no
/// symbols left: the static reference.
Graph atSizes(Graph graph, const std::vector<int64_t> &sizes) {
  auto sizeOf = [&](const std::string &name) {
    for (size_t s = 0; s < graph.symbols.size(); ++s)
      if (graph.symbols[s].name == name)
        return sizes[s];
    FAIL("no symbol '" << name << "'");
    return int64_t(0);
  };
  for (GraphInput &input : graph.inputs) {
    for (size_t d = 0; d < input.dimNames.size(); ++d) {
      const std::string &name = input.dimNames[d];
      if (name.empty())
        continue;
      if (name.front() != '(') {
        input.shape[d] = sizeOf(name);
        continue;
      }
      // A sum of symbols, "(past+seq)".
      input.shape[d] = 0;
      std::string terms = name.substr(1, name.size() - 2);
      for (size_t from = 0, to; from <= terms.size(); from = to + 1) {
        to = std::min(terms.find('+', from), terms.size());
        input.shape[d] += sizeOf(terms.substr(from, to - from));
      }
    }
    input.dimNames.clear();
  }
  graph.symbols.clear();
  return graph;
}

/// Inputs for `graph` (static) drawn from `seed`.
std::vector<Tensor> inputsFor(const Graph &graph, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> inputs;
  for (const GraphInput &input : graph.inputs)
    inputs.push_back(randomTensor(input.dtype, input.shape, rng, -2, 2));
  return inputs;
}

size_t cacheEntries(const std::string &directory) {
  size_t count = 0;
  for (const auto &entry :
       std::filesystem::recursive_directory_iterator(directory))
    count += entry.is_regular_file();
  return count;
}

/// Compiles `graph` once, runs it at each of `sizes`, and checks every
/// output against the unfused static reference; then checks that no run
/// compiled a kernel, and that one executable per size was kept.
void checkSizes(const Graph &graph,
                const std::vector<std::vector<int64_t>> &sizes, DType dtype,
                Target target, bool fusedAttention = true) {
  std::string cacheDir = test::freshTempDir("symbolic-cache");
  CompileOptions options = test::testOptions(true, target);
  options.attention = fusedAttention;
  options.cacheDir = cacheDir;
  CompiledModel model = compile(graph, options);
  const Program &program = model.program();
  REQUIRE(program.isSymbolic());
  // The graph's symbols, then the sums of them the model's dims are.
  REQUIRE(program.symbols.size() >= graph.symbols.size());
  for (size_t s = 0; s < program.symbols.size(); ++s)
    CHECK(program.symbols[s].isDerived() == (s >= graph.symbols.size()));
  for (const KernelDesc &kernel : program.kernels)
    CHECK(kernel.readsDimSizes);
  size_t compiled = cacheEntries(cacheDir);
  CHECK(compiled > 0);

  for (size_t i = 0; i < sizes.size(); ++i) {
    Graph reference = atSizes(graph, sizes[i]);
    std::vector<Tensor> inputs = inputsFor(reference, 100 + i);
    std::vector<Tensor> expected =
        compile(reference, test::testOptions(false, Target::Cpu)).run(inputs);
    std::vector<Tensor> actual = model.run(inputs);
    REQUIRE(actual.size() == expected.size());
    for (size_t o = 0; o < actual.size(); ++o) {
      INFO("sizes #" << i << ", output " << o << " on " << targetName(target));
      REQUIRE(actual[o].shape == expected[o].shape);
      Comparison comparison =
          compareTensors(actual[o], expected[o], toleranceFor(dtype));
      CHECK(comparison.ok());
      if (!comparison.ok())
        WARN(test::describeMismatch(actual[o], expected[o], comparison));
    }
  }
  // Later sizes found every kernel in the cache.
  CHECK(cacheEntries(cacheDir) == compiled);
  auto &symbolic = dynamic_cast<SymbolicExecutable &>(executableOf(model));
  std::set<std::vector<int64_t>> distinct(sizes.begin(), sizes.end());
  // (The minima's instance is made when the model loads.)
  CHECK(symbolic.instanceCount() >= distinct.size());
  CHECK(symbolic.instanceCount() <= distinct.size() + 1);
}

/// x[rows, 256] + b -> gelu, softmax, layer_norm, a row sum, and a matmul
/// with a fixed right operand: every kernel kind that takes symbolic rows.
Graph rowsGraph(DType dtype) {
  std::mt19937_64 rng(3);
  GraphBuilder b("symbolic_rows");
  b.symbol("rows", 1, 300);
  std::string x = b.input("x", dtype, {-1, 256}, {"rows", ""});
  std::string bias = b.constant("b", randomTensor(dtype, {256}, rng, -1, 1));
  std::string gamma =
      b.constant("gamma", randomTensor(dtype, {256}, rng, 0.5, 1.5));
  std::string beta =
      b.constant("beta", randomTensor(dtype, {256}, rng, -0.5, 0.5));
  std::string w =
      b.constant("w", randomTensor(dtype, {256, 48}, rng, -0.1, 0.1));
  std::string y = b.op("add", {x, bias});
  b.output(b.op("gelu", {y}));
  b.output(b.op("softmax", {y}));
  std::string normed = b.op("layer_norm", {y, gamma, beta});
  b.output(normed);
  b.output(b.op("reduce_sum", {x}, {{"axes", std::vector<int64_t>{-1}}}));
  b.output(b.op("matmul", {normed, w}));
  return b.build();
}

/// A builder of a graph with the symbols `batch` (1..4) and `seq` (1..40).
GraphBuilder batchAndSeqBuilder(const std::string &name) {
  GraphBuilder b(name);
  b.symbol("batch", 1, 4);
  b.symbol("seq", 1, 40);
  return b;
}

/// t[batch, seq, 64]: a norm over the last dim, a per-row scale read
/// [batch, seq, 1], and the rows merged for a matmul ([batch*seq, 64]).
Graph twoSymbolGraph() {
  std::mt19937_64 rng(5);
  GraphBuilder b = batchAndSeqBuilder("symbolic_batch_seq");
  std::string t = b.input("t", DType::F32, {-1, -1, 64}, {"batch", "seq", ""});
  std::string scale =
      b.input("scale", DType::F32, {-1, -1, 1}, {"batch", "seq", ""});
  std::string w =
      b.constant("w", randomTensor(DType::F32, {64, 16}, rng, -0.2, 0.2));
  std::string normed = b.op("rms_norm", {t});
  std::string scaled = b.op("mul", {normed, scale});
  b.output(scaled);
  std::string flat =
      b.op("reshape", {scaled}, {{"shape", std::vector<int64_t>{-1, 64}}});
  b.output(b.op("tanh", {b.op("matmul", {flat, w})}));
  return b.build();
}

/// Layout kernels over a leading symbolic dim: the head split of
/// [batch, 16, 64] into [batch, 4, 16, 16] (a reshape and a transpose that
/// keeps dim 0), a concat, a slice and a pad along fixed dims.
Graph layoutGraph() {
  GraphBuilder b("symbolic_layout");
  b.symbol("batch", 1, 8);
  std::string x = b.input("x", DType::F32, {-1, 16, 64}, {"batch", "", ""});
  std::string y = b.input("y", DType::F32, {-1, 16, 32}, {"batch", "", ""});
  std::string heads =
      b.op("reshape", {x}, {{"shape", std::vector<int64_t>{0, 16, 4, 16}}});
  b.output(b.op("sin", {b.op("transpose", {heads},
                             {{"perm", std::vector<int64_t>{0, 2, 1, 3}}})}));
  b.output(b.op("concat", {x, y}, {{"axis", int64_t(-1)}}));
  // A slice and a pad along fixed dims.
  b.output(b.op("slice", {x},
                {{"starts", std::vector<int64_t>{3}},
                 {"ends", std::vector<int64_t>{40}},
                 {"axes", std::vector<int64_t>{2}}}));
  b.output(b.op("pad", {y},
                {{"pads", std::vector<int64_t>{0, 1, 0, 0, 2, 3}},
                 {"constant_value", 0.5}}));
  return b.build();
}

/// Self-attention over a symbolic batch: [batch, 16, 256] split into 4
/// heads of 64 (reshape, transposes), softmax(q k^T / 8) v, the heads
/// merged back. Fused, one attention kernel; unfused, batched matmuls whose
/// batch is symbolic.
Graph attentionGraph(DType dtype) {
  std::mt19937_64 rng(9);
  GraphBuilder b("symbolic_attention");
  b.symbol("batch", 1, 6);
  std::string x = b.input("x", dtype, {-1, 16, 256}, {"batch", "", ""});
  auto heads = [&](const std::string &value, std::vector<int64_t> perm) {
    std::string split = b.op("reshape", {value},
                             {{"shape", std::vector<int64_t>{0, 16, 4, 64}}});
    return b.op("transpose", {split}, {{"perm", perm}});
  };
  std::string q = heads(x, {0, 2, 1, 3});
  std::string kt = heads(b.op("sin", {x}), {0, 2, 3, 1});
  std::string v = heads(b.op("cos", {x}), {0, 2, 1, 3});
  std::string scores =
      b.op("mul", {b.op("matmul", {q, kt}), b.scalar(0.125, dtype)});
  std::string o = b.op("matmul", {b.op("softmax", {scores}), v});
  std::string merged =
      b.op("transpose", {o}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  b.output(
      b.op("reshape", {merged}, {{"shape", std::vector<int64_t>{0, 16, 256}}}));
  return b.build();
}

/// A cache grown by concatenation: past [1, 2, past, 16] and the new
/// entries [1, 2, seq, 16] make present [1, 2, past+seq, 16], a derived
/// symbol. A pointwise kernel reads it, a three-way concat puts symbolic
/// slabs before a part, and seq queries attend to it (the keys and values)
/// under an additive mask given as an input [1, 1, seq, past+seq], whose
/// dim is checked against the sum rather than bound.
Graph concatCacheGraph() {
  GraphBuilder b("symbolic_concat_cache");
  b.symbol("past", 0, 40); // 0: an empty cache before the first step
  b.symbol("seq", 1, 8);
  auto heads = [&](const char *name, const char *length) {
    return b.input(name, DType::F32, {1, 2, -1, 16}, {"", "", length, ""});
  };
  std::string past = heads("past", "past");
  std::string fresh = heads("fresh", "seq");
  std::string q = heads("q", "seq");
  std::string mask = b.input("mask", DType::F32, {1, 1, -1, -1},
                             {"", "", "seq", "(past+seq)"});
  std::string present = b.op("concat", {past, fresh}, {{"axis", int64_t(2)}});
  b.output(present);
  b.output(b.op("tanh", {present}));
  b.output(b.op("concat", {fresh, past, fresh}, {{"axis", int64_t(2)}}));
  std::string kt = b.op("transpose", {present},
                        {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  std::string scores =
      b.op("add",
           {b.op("mul", {b.op("matmul", {q, kt}), b.scalar(0.25, DType::F32)}),
            mask});
  b.output(b.op("matmul", {b.op("softmax", {scores}), present}));
  return b.build();
}

/// A sequence length after a fixed batch of 3: layout kernels whose index
/// arithmetic reads it (transposes that move it, concats, a slice and pads
/// along fixed dims, a pad of the sequence itself, an embedding gather by [3,
/// seq] ids), a broadcast [seq, 1] read at every batch, and a softmax and layer
/// norm over rows [3, seq].
Graph sequenceLayoutGraph() {
  std::mt19937_64 rng(11);
  GraphBuilder b("symbolic_sequence_layout");
  b.symbol("seq", 1, 40);
  std::string x = b.input("x", DType::F32, {3, -1, 32}, {"", "seq", ""});
  std::string y = b.input("y", DType::F32, {3, -1, 8}, {"", "seq", ""});
  std::string z = b.input("z", DType::F32, {1, -1, 32}, {"", "seq", ""});
  std::string m = b.input("m", DType::F32, {-1, 1}, {"seq", ""});
  std::string ids = b.input("ids", DType::I64, {3, -1}, {"", "seq"});
  std::string table =
      b.constant("table", randomTensor(DType::F32, {10, 16}, rng, -1, 1));
  std::string gamma =
      b.constant("gamma", randomTensor(DType::F32, {32}, rng, 0.5, 1.5));
  std::string beta =
      b.constant("beta", randomTensor(DType::F32, {32}, rng, -0.5, 0.5));
  b.output(b.op("sin", {b.op("transpose", {x},
                             {{"perm", std::vector<int64_t>{1, 0, 2}}})}));
  b.output(b.op("transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 1}}}));
  b.output(b.op("concat", {x, y}, {{"axis", int64_t(-1)}}));
  b.output(b.op("concat", {x, z}, {{"axis", int64_t(0)}}));
  b.output(b.op("slice", {x},
                {{"starts", std::vector<int64_t>{5}},
                 {"ends", std::vector<int64_t>{20}},
                 {"axes", std::vector<int64_t>{2}}}));
  b.output(b.op("pad", {y},
                {{"pads", std::vector<int64_t>{1, 0, 2, 0, 0, 3}},
                 {"constant_value", -1.5}}));
  // Padding the sequence itself: [3, seq + 3, 8].
  b.output(b.op("pad", {y},
                {{"pads", std::vector<int64_t>{0, 2, 0, 0, 1, 0}},
                 {"constant_value", 0.5}}));
  b.output(b.op("gather", {table, ids}, {{"axis", int64_t(0)}}));
  b.output(b.op("add", {x, m}));
  b.output(b.op("softmax", {x}));
  b.output(b.op("layer_norm", {x, gamma, beta}));
  return b.build();
}

/// A self-attention block over a symbolic sequence after a fixed batch of
/// 2: x[2, seq, 128], layer norm, q/k/v projections, the head split into
/// [2, 2, seq, 64] (the transposes move seq), softmax(q k^T / 8 + mask) v
/// with a key-padding mask [2, 1, 1, seq], the heads merged back,
/// projected and added to x. The attention kernel takes the lengths and
/// strides per run.
Graph sequenceAttentionGraph(DType dtype) {
  std::mt19937_64 rng(13);
  GraphBuilder b("symbolic_sequence_attention");
  b.symbol("seq", 1, 70);
  std::string x = b.input("x", dtype, {2, -1, 128}, {"", "seq", ""});
  std::string mask = b.input("mask", dtype, {2, 1, 1, -1}, {"", "", "", "seq"});
  auto weight = [&](const char *name) {
    return b.constant(name, randomTensor(dtype, {128, 128}, rng, -0.1, 0.1));
  };
  std::string normed = b.op("layer_norm", {x});
  auto heads = [&](const std::string &value, std::vector<int64_t> perm) {
    std::string split = b.op("reshape", {value},
                             {{"shape", std::vector<int64_t>{0, -1, 2, 64}}});
    return b.op("transpose", {split}, {{"perm", perm}});
  };
  std::string q = heads(b.op("matmul", {normed, weight("wq")}), {0, 2, 1, 3});
  std::string kt = heads(b.op("matmul", {normed, weight("wk")}), {0, 2, 3, 1});
  std::string v = heads(b.op("matmul", {normed, weight("wv")}), {0, 2, 1, 3});
  std::string scores =
      b.op("mul", {b.op("matmul", {q, kt}), b.scalar(0.125, dtype)});
  std::string o =
      b.op("matmul", {b.op("softmax", {b.op("add", {scores, mask})}), v});
  std::string merged =
      b.op("transpose", {o}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  std::string flat =
      b.op("reshape", {merged}, {{"shape", std::vector<int64_t>{0, -1, 128}}});
  b.output(b.op("add", {x, b.op("matmul", {flat, weight("wo")})}));
  return b.build();
}

/// Reductions whose rows read values repeated along some of their
/// symbolic dims: a [1, seq, 32] position table added to [batch, seq, 32]
/// before a layer norm (GPT-2's embeddings), a per-batch scale [batch, 1, 1]
/// before a softmax, and [seq, 32] at each of [3, seq, 32]'s rows (a fixed
/// dim before the symbolic one).
Graph repeatedRowsGraph() {
  std::mt19937_64 rng(17);
  GraphBuilder b = batchAndSeqBuilder("symbolic_repeated_rows");
  std::string x = b.input("x", DType::F32, {-1, -1, 32}, {"batch", "seq", ""});
  std::string pos = b.input("pos", DType::F32, {1, -1, 32}, {"", "seq", ""});
  std::string scale =
      b.input("scale", DType::F32, {-1, 1, 1}, {"batch", "", ""});
  std::string y = b.input("y", DType::F32, {3, -1, 32}, {"", "seq", ""});
  std::string per = b.input("per", DType::F32, {-1, 32}, {"seq", ""});
  std::string gamma =
      b.constant("gamma", randomTensor(DType::F32, {32}, rng, 0.5, 1.5));
  std::string beta =
      b.constant("beta", randomTensor(DType::F32, {32}, rng, -0.5, 0.5));
  std::string embedded = b.op("add", {x, pos});
  b.output(b.op("layer_norm", {embedded, gamma, beta}));
  b.output(b.op("softmax", {b.op("mul", {embedded, scale})}));
  b.output(b.op("softmax", {b.op("add", {y, per})}));
  return b.build();
}

/// Reductions along a symbolic dim: rows as long as the sequence (a
/// masked softmax over [batch, 3, seq] with a per-key bias, a sum and a
/// max over seq, f16 rows), rows [seq, 8] whose outer dim is the sequence
/// (a mean over both), and columns along the sequence.
Graph symbolicRowLengthGraph() {
  GraphBuilder b = batchAndSeqBuilder("symbolic_row_length");
  std::string x = b.input("x", DType::F32, {-1, 3, -1}, {"batch", "", "seq"});
  std::string bias = b.input("bias", DType::F32, {-1}, {"seq"});
  std::string h = b.input("h", DType::F16, {-1, -1}, {"batch", "seq"});
  std::string t = b.input("t", DType::F32, {-1, -1, 8}, {"batch", "seq", ""});
  b.output(b.op("softmax", {b.op("add", {x, bias})}));
  b.output(b.op("reduce_sum", {x}, {{"axes", std::vector<int64_t>{2}}}));
  b.output(
      b.op("reduce_max", {b.op("exp", {x})},
           {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t(0)}}));
  b.output(b.op("softmax", {h}));
  b.output(b.op("reduce_mean", {t}, {{"axes", std::vector<int64_t>{1, 2}}}));
  // Columns: a mean over seq (sentence embeddings' pooling), a max of a
  // product over [seq, 3] keeping a [batch, ..., 8] column block.
  b.output(b.op("reduce_mean", {t}, {{"axes", std::vector<int64_t>{1}}}));
  std::string w =
      b.input("w", DType::F32, {-1, -1, 3, 8}, {"batch", "seq", "", ""});
  b.output(
      b.op("reduce_max", {b.op("mul", {w, b.scalar(-1.5, DType::F32)})},
           {{"axes", std::vector<int64_t>{1, 2}}, {"keepdims", int64_t(0)}}));
  return b.build();
}

/// Library matmuls whose n and k are symbolic: x^T y over a sequence
/// ([64, seq] @ [seq, 16], k varies), and a batched product whose m and n
/// are the sequence ([batch, seq, 16] @ [batch, 16, seq], a tanh after
/// it).
Graph symbolicMatmulGraph() {
  GraphBuilder b = batchAndSeqBuilder("symbolic_matmul");
  std::string x = b.input("x", DType::F32, {-1, 64}, {"seq", ""});
  std::string y = b.input("y", DType::F32, {-1, 16}, {"seq", ""});
  std::string z = b.input("z", DType::F32, {-1, -1, 16}, {"batch", "seq", ""});
  std::string xt =
      b.op("transpose", {x}, {{"perm", std::vector<int64_t>{1, 0}}});
  b.output(b.op("matmul", {xt, y}));
  std::string zt =
      b.op("transpose", {z}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  b.output(b.op("tanh", {b.op("matmul", {z, zt})}));
  return b.build();
}

void checkSymbolicDims(Target target) {
  SECTION("reductions along a symbolic dim") {
    checkSizes(symbolicRowLengthGraph(), {{1, 1}, {2, 17}, {4, 40}, {3, 8}},
               DType::F16, target);
  }
  SECTION("matmuls of symbolic n and k") {
    checkSizes(symbolicMatmulGraph(), {{1, 1}, {2, 17}, {4, 40}, {3, 8}},
               DType::F32, target);
  }
  SECTION("attention over a symbolic sequence, unfused") {
    for (DType dtype : {DType::F32, DType::F16}) {
      INFO(dtypeName(dtype));
      checkSizes(sequenceAttentionGraph(dtype), {{1}, {33}, {70}, {8}}, dtype,
                 target, /*fusedAttention=*/false);
    }
  }
  SECTION("rows that repeat along symbolic dims") {
    checkSizes(repeatedRowsGraph(), {{1, 1}, {2, 17}, {4, 40}, {3, 9}},
               DType::F32, target);
  }
  SECTION("rows, f32") {
    checkSizes(rowsGraph(DType::F32), {{1}, {7}, {300}, {100}, {7}}, DType::F32,
               target);
  }
  SECTION("rows, f16") {
    checkSizes(rowsGraph(DType::F16), {{5}, {256}, {1}}, DType::F16, target);
  }
  SECTION("layout") {
    checkSizes(layoutGraph(), {{1}, {5}, {8}, {2}}, DType::F32, target);
  }
  SECTION("attention, fused") {
    for (DType dtype : {DType::F32, DType::F16}) {
      INFO(dtypeName(dtype));
      checkSizes(attentionGraph(dtype), {{1}, {4}, {6}}, dtype, target);
    }
    // f16 forms the attention kernel on both targets.
    Program program =
        lowerGraph(attentionGraph(DType::F16), test::testOptions(true, target))
            .program;
    CHECK(std::any_of(program.kernels.begin(), program.kernels.end(),
                      [](const KernelDesc &kernel) {
                        return kernel.schedule == "attention";
                      }));
  }
  SECTION("attention, matmul softmax matmul") {
    checkSizes(attentionGraph(DType::F32), {{2}, {6}, {1}}, DType::F32, target,
               /*fusedAttention=*/false);
  }
  SECTION("a cache grown by concatenation: sums of symbols") {
    checkSizes(concatCacheGraph(), {{5, 1}, {40, 8}, {0, 3}, {17, 1}},
               DType::F32, target);
    Program program =
        lowerGraph(concatCacheGraph(), test::testOptions(true, target)).program;
    std::vector<std::string> names;
    for (const DimSymbol &symbol : program.symbols)
      names.push_back(symbol.name);
    CHECK(names == std::vector<std::string>{"past", "seq", "(past+seq)",
                                            "(past+seq*2)"});
    CHECK(program.symbols[2].min == 1);
    CHECK(program.symbols[2].max == 48);
    CHECK(program.symbols[3].max == 56);
  }
  SECTION("a sequence length after a fixed dim: layout, broadcasts, rows") {
    checkSizes(sequenceLayoutGraph(), {{1}, {17}, {40}, {2}}, DType::F32,
               target);
  }
  SECTION("a sequence length after a fixed dim: attention") {
    for (DType dtype : {DType::F32, DType::F16}) {
      INFO(dtypeName(dtype));
      checkSizes(sequenceAttentionGraph(dtype), {{1}, {33}, {70}, {9}}, dtype,
                 target);
      Program program = lowerGraph(sequenceAttentionGraph(dtype),
                                   test::testOptions(true, target))
                            .program;
      CHECK(std::count_if(program.kernels.begin(), program.kernels.end(),
                          [](const KernelDesc &kernel) {
                            return kernel.schedule == "attention";
                          }) == 1);
    }
  }
  SECTION("batch and seq") {
    checkSizes(twoSymbolGraph(), {{1, 1}, {2, 17}, {4, 40}, {3, 9}}, DType::F32,
               target);
  }
}

} // namespace

TEST_CASE("a model with symbolic dims compiles once and runs at any size",
          "[symbolic]") {
  checkSymbolicDims(Target::Cpu);
}

TEST_CASE("a model with symbolic dims compiles once and runs at any size on "
          "the GPU",
          "[symbolic][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkSymbolicDims(Target::Cuda);
}

TEST_CASE("symbolic dims: sizes outside the range and unsupported ops are "
          "errors",
          "[symbolic]") {
  CompiledModel model =
      compile(rowsGraph(DType::F32), test::testOptions(true, Target::Cpu));
  std::mt19937_64 rng(1);
  auto runAt = [&](Shape shape) {
    model.run({randomTensor(DType::F32, shape, rng)});
  };
  CHECK_THROWS_WITH(runAt({301, 256}),
                    Catch::Contains("input 'x' dim 0 ('rows') is 301, "
                                    "outside its range 1..300"));
  CHECK_THROWS_WITH(runAt({0, 256}), Catch::Contains("outside its range"));
  CHECK_THROWS_WITH(runAt({4, 255}),
                    Catch::Contains("input 'x' dim 1 is 255, the model "
                                    "takes 256"));
  CHECK_THROWS_WITH(runAt({4}), Catch::Contains("the model takes rank 2"));

  // Two inputs that name one symbol must agree.
  GraphBuilder pair("pair");
  pair.symbol("n", 1, 8);
  std::string a = pair.input("a", DType::F32, {-1, 4}, {"n", ""});
  std::string c = pair.input("c", DType::F32, {-1, 4}, {"n", ""});
  pair.output(pair.op("add", {a, c}));
  CompiledModel added =
      compile(pair.build(), test::testOptions(true, Target::Cpu));
  CHECK_THROWS_WITH(added.run({randomTensor(DType::F32, {3, 4}, rng),
                               randomTensor(DType::F32, {5, 4}, rng)}),
                    Catch::Contains("input 'c' dim 0 ('n') is 5, but input "
                                    "'a' dim 0 made 'n' 3"));

  // Slicing or padding the symbolic dim itself is refused.
  GraphBuilder sliced("sliced");
  sliced.symbol("n", 1, 8);
  std::string t = sliced.input("t", DType::F32, {-1, 4}, {"n", ""});
  sliced.output(sliced.op("slice", {t},
                          {{"starts", std::vector<int64_t>{1}},
                           {"ends", std::vector<int64_t>{3}},
                           {"axes", std::vector<int64_t>{0}}}));
  CHECK_THROWS_WITH(
      compile(sliced.build(), test::testOptions(true, Target::Cpu)),
      Catch::Contains("slices dim 0, a symbolic dim (not supported yet)"));
  // Cropping one (a negative pad) could leave it empty: refused too.
  GraphBuilder cropped("cropped");
  cropped.symbol("n", 1, 8);
  std::string u = cropped.input("u", DType::F32, {-1, 4}, {"n", ""});
  cropped.output(
      cropped.op("pad", {u}, {{"pads", std::vector<int64_t>{-1, 0, 0, 0}}}));
  CHECK_THROWS_WITH(
      compile(cropped.build(), test::testOptions(true, Target::Cpu)),
      Catch::Contains("crops dim 0, a symbolic dim (only padding is "
                      "supported)"));

  // Columns whose inner dims are symbolic are refused.
  GraphBuilder summed("summed");
  summed.symbol("n", 1, 8);
  std::string s = summed.input("s", DType::F32, {4, -1}, {"", "n"});
  summed.output(
      summed.op("reduce_sum", {s}, {{"axes", std::vector<int64_t>{0}}}));
  CHECK_THROWS_WITH(
      compile(summed.build(), test::testOptions(true, Target::Cpu)),
      Catch::Contains("has the symbolic inner dim 1; a column reduction takes "
                      "symbolic outer and reduced dims only"));
  // So are reductions with two symbolic reduced dims.
  GraphBuilder square("square");
  square.symbol("n", 1, 8);
  std::string q = square.input("q", DType::F32, {4, -1, -1}, {"", "n", "n"});
  square.output(
      square.op("reduce_sum", {q}, {{"axes", std::vector<int64_t>{1, 2}}}));
  CHECK_THROWS_WITH(
      compile(square.build(), test::testOptions(true, Target::Cpu)),
      Catch::Contains("has symbolic dims 1 and 2 in its reduced points; only "
                      "the outermost reduced dim may be symbolic"));
}

TEST_CASE("symbolic dims: a fixed size by name, and specialized sizes",
          "[symbolic]") {
  Graph graph = rowsGraph(DType::F32);
  // `--dim rows=7`: the dim is fixed, the program static.
  CompileOptions fixedOptions = test::testOptions(true, Target::Cpu);
  fixedOptions.dimRanges["rows"] = {"rows", 7, 7};
  Program fixed = lowerGraph(graph, fixedOptions).program;
  CHECK_FALSE(fixed.isSymbolic());
  CHECK(fixed.buffers[fixed.inputs[0]].shape == Shape{7, 256});
  // A range replaces the graph's own.
  CompileOptions narrowed = test::testOptions(true, Target::Cpu);
  narrowed.dimRanges["rows"] = {"rows", 2, 9};
  Program ranged = lowerGraph(graph, narrowed).program;
  REQUIRE(ranged.symbols.size() == 1);
  CHECK(ranged.symbols[0].min == 2);
  CHECK(ranged.symbols[0].max == 9);

  // `--specialize rows=7`: a run at 7 runs the static compile, other sizes
  // the symbolic one; both match the reference.
  CompileOptions options = test::testOptions(true, Target::Cpu);
  options.specializations["rows"] = {7};
  CompiledModel model = compile(graph, options);
  auto &symbolic = dynamic_cast<SymbolicExecutable &>(executableOf(model));
  CHECK(symbolic.specializationCount() == 1);
  size_t instances = symbolic.instanceCount();
  for (int64_t rows : {7, 9}) {
    INFO("rows " << rows);
    Graph reference = atSizes(graph, {rows});
    std::vector<Tensor> inputs = inputsFor(reference, rows);
    std::vector<Tensor> expected =
        compile(reference, test::testOptions(false, Target::Cpu)).run(inputs);
    std::vector<Tensor> actual = model.run(inputs);
    REQUIRE(actual.size() == expected.size());
    for (size_t o = 0; o < actual.size(); ++o)
      CHECK(compareTensors(actual[o], expected[o]).ok());
    // 7 made no instance of the symbolic program; 9 did.
    CHECK(symbolic.instanceCount() == instances + (rows == 9 ? 1 : 0));
  }

  CompileOptions unknown = test::testOptions(true, Target::Cpu);
  unknown.specializations["cols"] = {4};
  CHECK_THROWS_WITH(compile(graph, unknown),
                    Catch::Contains("--specialize names 'cols', which is not "
                                    "a symbolic dim of the model"));
  CompileOptions outside = test::testOptions(true, Target::Cpu);
  outside.specializations["rows"] = {301};
  CHECK_THROWS_WITH(compile(graph, outside),
                    Catch::Contains("--specialize rows=301 is outside its "
                                    "range 1..300"));
}

TEST_CASE("symbolic dims: sums of symbols are derived symbols", "[symbolic]") {
  std::vector<DimSymbol> symbols = {{"past", 1, 40}, {"seq", 1, 8, 4}};
  SymbolicSize past = SymbolicSize::symbol(0), seq = SymbolicSize::symbol(1);
  auto add = [&](SymbolicSize a, SymbolicSize b, bool subtract = false) {
    return addSymbolicSizes(a, b, subtract, symbols);
  };
  // Like terms combine; a sum of distinct ones is one symbol, found again.
  CHECK(add(seq, seq) == SymbolicSize{2, {1}});
  std::optional<SymbolicSize> total = add(past, seq);
  REQUIRE(total == SymbolicSize::symbol(2));
  REQUIRE(symbols.size() == 3);
  CHECK(symbols[2].name == "(past+seq)");
  CHECK(symbols[2].min == 2);
  CHECK(symbols[2].max == 48);
  CHECK(symbols[2].multiple == 1);
  CHECK(add(seq, past) == total);
  // Sums expand: (past+seq) - past is seq, (past+seq) + 1 a new sum.
  CHECK(add(*total, past, true) == seq);
  CHECK(add(*total, *total, true) == SymbolicSize::constant(0));
  std::optional<SymbolicSize> wider = add(*total, SymbolicSize::constant(1));
  REQUIRE(wider == SymbolicSize::symbol(3));
  CHECK(symbols[3].name == "(past+seq+1)");
  CHECK(add(*wider, SymbolicSize::constant(1), true) == total);
  // Multiples: seq is declared a multiple of 4, so 2*seq + 8 is one of 8.
  std::optional<SymbolicSize> aligned =
      add(SymbolicSize{2, {1}}, SymbolicSize::constant(8));
  REQUIRE(aligned);
  CHECK(symbols[aligned->symbols[0]].multiple == 8);
  // What is no size over the whole range: a difference that does not
  // cancel, a negative product.
  size_t count = symbols.size();
  CHECK_FALSE(add(past, seq, true));
  CHECK_FALSE(add(seq, SymbolicSize::constant(1), true));
  CHECK_FALSE(add(SymbolicSize::constant(0), seq, true));
  CHECK(symbols.size() == count);
  // Bounds of differences see through sums.
  CHECK(differenceBounds(*total, past, symbols) ==
        std::pair<int64_t, int64_t>{1, 8});
  CHECK(differenceBounds(past, seq, symbols) ==
        std::pair<int64_t, int64_t>{-7, 39});
  // Evaluated from the bound symbols.
  std::vector<int64_t> values = {10, 4, -1, -1, -1};
  evaluateDerivedSymbols(symbols, values);
  CHECK(values[2] == 14);
  CHECK(values[3] == 15);
  CHECK(values[4] == 16);
}

TEST_CASE("symbolic dims: an input dim that is a sum is checked, not bound",
          "[symbolic]") {
  CompiledModel model =
      compile(concatCacheGraph(), test::testOptions(true, Target::Cpu));
  std::mt19937_64 rng(2);
  auto runAt = [&](int64_t past, int64_t seq, int64_t maskLength) {
    model.run({randomTensor(DType::F32, {1, 2, past, 16}, rng),
               randomTensor(DType::F32, {1, 2, seq, 16}, rng),
               randomTensor(DType::F32, {1, 2, seq, 16}, rng),
               randomTensor(DType::F32, {1, 1, seq, maskLength}, rng)});
  };
  CHECK_NOTHROW(runAt(6, 2, 8));
  CHECK_THROWS_WITH(runAt(6, 2, 9),
                    Catch::Contains("input 'mask' dim 3 ('(past+seq)') is 9, "
                                    "but the sizes bound make it 8"));
  CHECK_NOTHROW(runAt(0, 2, 2));
  // A product is checked the same way: b is [2*n, 4], bound by a's n.
  GraphBuilder doubled("doubled");
  doubled.symbol("n", 1, 8);
  std::string a = doubled.input("a", DType::F32, {-1, 4}, {"n", ""});
  std::string b = doubled.input("b", DType::F32, {-1, 4}, {"2*n", ""});
  doubled.output(doubled.op(
      "add", {doubled.op("concat", {a, a}, {{"axis", int64_t(0)}}), b}));
  CompiledModel twice =
      compile(doubled.build(), test::testOptions(true, Target::Cpu));
  std::vector<Tensor> sum = twice.run({randomTensor(DType::F32, {3, 4}, rng),
                                       randomTensor(DType::F32, {6, 4}, rng)});
  CHECK(sum[0].shape == Shape{6, 4});
  CHECK_THROWS_WITH(
      twice.run({randomTensor(DType::F32, {3, 4}, rng),
                 randomTensor(DType::F32, {7, 4}, rng)}),
      Catch::Contains("input 'b' dim 0 ('n*2') is 7, but the sizes bound "
                      "make it 6"));
  CHECK_THROWS_WITH(runAt(41, 2, 43),
                    Catch::Contains("('past') is 41, outside its range 0..40"));
}

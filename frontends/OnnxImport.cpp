//===- OnnxImport.cpp - .onnx files into fusec graphs --------------------===//
//
// Each supported ONNX op has one row in kOnnxOps: the graph op it becomes,
// the opsets it is read for, the attributes it accepts, and the inputs that
// become attributes (they must be constants: initializers or Constant
// outputs). Anything else is an error naming the node; every node is
// checked before the errors are reported, so a model's whole list of
// missing features comes out at once.
//
//===----------------------------------------------------------------------===//

#include "frontends/Importer.h"
#include "frontends/Onnx.h"
#include "frontends/OnnxInferenceCopy.h"
#include "frontends/OnnxShapeFolding.h"

#include "runtime/core/Error.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <variant>

namespace fusec {

namespace {

/// The default-domain opsets read: the semantics of every row below hold
/// for kMinOpset to kMaxOpset (28, the newest of ONNX 1.23; what changed
/// after 17 is in kAttributeOpsets and the converters). Models of older
/// opsets (from kOldestOpset) are read op by op: opsetVersionProblem says
/// which older versions of an op compute the same.
constexpr int64_t kOldestOpset = 1, kMinOpset = 11, kMaxOpset = 28;

/// Attributes an op has in some of its versions only: {op, attribute,
/// first opset, last opset}. An attribute outside its opsets is an error,
/// as it is to ONNX's checker (ONNX 1.12's, which fusec has, knows nothing
/// after opset 17).
struct AttributeOpsets {
  const char *op, *attr;
  int64_t first, last;
};
const std::vector<AttributeOpsets> &attributeOpsets() {
  static const std::vector<AttributeOpsets> table = [] {
    std::vector<AttributeOpsets> rows = {
        {"Split", "split", kOldestOpset, 12},
        {"Split", "num_outputs", 18, kMaxOpset},
        {"AveragePool", "dilations", 19, kMaxOpset},
        {"Resize", "antialias", 18, kMaxOpset},
        {"Resize", "axes", 18, kMaxOpset},
        {"Resize", "keep_aspect_ratio_policy", 18, kMaxOpset},
        {"Cast", "saturate", 19, kMaxOpset},
        {"Cast", "round_mode", 24, kMaxOpset},
        {"CastLike", "saturate", 19, kMaxOpset},
        {"CastLike", "round_mode", 24, kMaxOpset},
        {"QuantizeLinear", "saturate", 19, kMaxOpset},
        {"QuantizeLinear", "block_size", 21, kMaxOpset},
        {"QuantizeLinear", "output_dtype", 21, kMaxOpset},
        {"QuantizeLinear", "precision", 23, kMaxOpset},
        {"DequantizeLinear", "block_size", 21, kMaxOpset},
        {"DequantizeLinear", "output_dtype", 23, kMaxOpset},
        {"SpaceToDepth", "mode", 28, kMaxOpset},
        {"Range", "stash_type", 27, kMaxOpset},
        {"Attention", "left_window_size", 25, kMaxOpset},
        {"TopK", "k", kOldestOpset, 9},
        {"DFT", "axis", 17, 19},
        {"Upsample", "scales", 7, 8},
        {"Clip", "min", 6, 10},
        {"Clip", "max", 6, 10},
        {"Slice", "starts", kOldestOpset, 9},
        {"Slice", "ends", kOldestOpset, 9},
        {"Slice", "axes", kOldestOpset, 9},
        {"Pad", "pads", 2, 10},
        {"Pad", "value", 2, 10},
        {"TopK", "largest", 11, kMaxOpset},
        {"TopK", "sorted", 11, kMaxOpset},
        {"Attention", "right_window_size", 25, kMaxOpset}};
    // Opset 18 made the reductions' axes an input, as ReduceSum's in 13.
    for (const char *op : {"ReduceL1", "ReduceL2", "ReduceLogSum",
                           "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                           "ReduceMin", "ReduceProd", "ReduceSumSquare"}) {
      rows.push_back({op, "axes", kOldestOpset, 17});
      rows.push_back({op, "noop_with_empty_axes", 18, kMaxOpset});
    }
    rows.push_back({"ReduceSum", "axes", kOldestOpset, 12});
    rows.push_back({"ReduceSum", "noop_with_empty_axes", 13, kMaxOpset});
    return rows;
  }();
  return table;
}

/// Why `attr` of `opType` is not an attribute in `opset` ("" when it is,
/// or when its opsets are not restricted).
std::string attributeOpsetProblem(const std::string &opType,
                                  const std::string &attr, int64_t opset) {
  for (const AttributeOpsets &row : attributeOpsets())
    if (opType == row.op && attr == row.attr &&
        (opset < row.first || opset > row.last))
      return "attribute '" + attr + "' of " + opType +
             " is defined in opsets " + std::to_string(row.first) + " to " +
             std::to_string(row.last) + ", not in " + std::to_string(opset);
  return "";
}

/// Why a node cannot be converted; collected, not thrown out of the model.
struct Unsupported {
  std::string reason;
};

// ONNX element types newer than Debian's ONNX 1.12 (its enum stops at 16).
constexpr int32_t kOnnxFloat8E4M3FN = 17, kOnnxFloat8E4M3FNUZ = 18,
                  kOnnxFloat8E5M2 = 19, kOnnxFloat8E5M2FNUZ = 20,
                  kOnnxUInt4 = 21, kOnnxInt4 = 22, kOnnxFloat4E2M1 = 23,
                  kOnnxFloat8E8M0 = 24, kOnnxUInt2 = 25, kOnnxInt2 = 26;

std::optional<DType> dtypeOfOnnx(int32_t elemType) {
  switch (elemType) {
  case onnx::TensorProto::FLOAT:
    return DType::F32;
  case onnx::TensorProto::DOUBLE:
    return DType::F64;
  case onnx::TensorProto::FLOAT16:
    return DType::F16;
  case onnx::TensorProto::BFLOAT16:
    return DType::BF16;
  case onnx::TensorProto::INT8:
    return DType::I8;
  case onnx::TensorProto::INT32:
    return DType::I32;
  case onnx::TensorProto::INT64:
    return DType::I64;
  case onnx::TensorProto::BOOL:
    return DType::I1;
  case onnx::TensorProto::INT16:
    return DType::I16;
  case onnx::TensorProto::UINT8:
    return DType::U8;
  case onnx::TensorProto::UINT16:
    return DType::U16;
  case onnx::TensorProto::UINT32:
    return DType::U32;
  case onnx::TensorProto::UINT64:
    return DType::U64;
  // Newer than Debian's ONNX (1.12), whose enum stops at BFLOAT16 (16).
  case kOnnxFloat8E4M3FN:
    return DType::F8E4M3FN;
  case kOnnxFloat8E4M3FNUZ:
    return DType::F8E4M3FNUZ;
  case kOnnxFloat8E5M2:
    return DType::F8E5M2;
  case kOnnxFloat8E5M2FNUZ:
    return DType::F8E5M2FNUZ;
  case kOnnxUInt4:
    return DType::U4;
  case kOnnxInt4:
    return DType::I4;
  case kOnnxFloat4E2M1:
    return DType::F4E2M1;
  case kOnnxFloat8E8M0:
    return DType::F8E8M0;
  case kOnnxUInt2:
    return DType::U2;
  case kOnnxInt2:
    return DType::I2;
  default:
    return std::nullopt;
  }
}

/// The ONNX element type of `dtype` (the inverse of dtypeOfOnnx).
int32_t onnxTypeOf(DType dtype) {
  for (int32_t elemType = onnx::TensorProto_DataType_DataType_MIN;
       elemType <= onnx::TensorProto_DataType_DataType_MAX; ++elemType)
    if (dtypeOfOnnx(elemType) == dtype)
      return elemType;
  return onnx::TensorProto::UNDEFINED;
}

std::string onnxTypeName(int32_t elemType) {
  if (onnx::TensorProto_DataType_IsValid(elemType))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(elemType));
  static const std::map<int32_t, const char *> kNewerNames = {
      {kOnnxFloat8E4M3FN, "FLOAT8E4M3FN"},
      {kOnnxFloat8E4M3FNUZ, "FLOAT8E4M3FNUZ"},
      {kOnnxFloat8E5M2, "FLOAT8E5M2"},
      {kOnnxFloat8E5M2FNUZ, "FLOAT8E5M2FNUZ"},
      {kOnnxUInt4, "UINT4"},
      {kOnnxInt4, "INT4"},
      {kOnnxFloat4E2M1, "FLOAT4E2M1"},
      {kOnnxFloat8E8M0, "FLOAT8E8M0"},
      {kOnnxUInt2, "UINT2"},
      {kOnnxInt2, "INT2"},
      {27, "FLOAT6E2M3"},
      {28, "FLOAT6E3M2"}};
  if (auto it = kNewerNames.find(elemType); it != kNewerNames.end())
    return it->second;
  return "type " + std::to_string(elemType);
}

/// The bytes of an external-data tensor: the file must stay inside the
/// model's directory and hold `offset + length` bytes.
TensorBytes readExternalData(const onnx::TensorProto &proto,
                             const std::filesystem::path &modelDir,
                             int64_t expectedBytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto &entry : proto.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    } catch (const std::exception &) {
      throw Unsupported{"external data " + entry.key() + " '" + entry.value() +
                        "' is not a number"};
    }
  }
  std::filesystem::path relative(location);
  if (location.empty() || relative.is_absolute())
    throw Unsupported{"external data location '" + location +
                      "' must be a path relative to the model's directory"};
  for (const std::filesystem::path &part : relative)
    if (part == "..")
      throw Unsupported{"external data location '" + location +
                        "' may not leave the model's directory ('..')"};
  std::error_code error;
  std::filesystem::path root = std::filesystem::canonical(modelDir, error);
  std::filesystem::path file =
      std::filesystem::canonical(modelDir / relative, error);
  if (error)
    throw Unsupported{"external data file '" + location +
                      "' cannot be opened: " + error.message()};
  auto [rootEnd, fileIt] =
      std::mismatch(root.begin(), root.end(), file.begin(), file.end());
  if (rootEnd != root.end())
    throw Unsupported{"external data file '" + location +
                      "' resolves outside the model's directory (a symlink)"};
  uintmax_t size = std::filesystem::file_size(file, error);
  if (length < 0)
    length = expectedBytes;
  if (error || offset < 0 || length != expectedBytes ||
      static_cast<uintmax_t>(offset) + static_cast<uintmax_t>(length) > size)
    throw Unsupported{"external data '" + location + "' (offset " +
                      std::to_string(offset) + ", length " +
                      std::to_string(length) + ") does not hold the " +
                      std::to_string(expectedBytes) + " bytes the dims need"};
  TensorBytes bytes(expectedBytes);
  std::ifstream in(file, std::ios::binary);
  in.seekg(offset);
  in.read(reinterpret_cast<char *>(bytes.data()), expectedBytes);
  if (!in)
    throw Unsupported{"external data '" + location + "' could not be read"};
  return bytes;
}

/// A TensorProto as a tensor: raw_data, the typed fields, or external
/// data, each checked against the dims before anything is allocated.
Tensor tensorFromProto(const onnx::TensorProto &proto,
                       const std::filesystem::path &modelDir) {
  std::optional<DType> dtype = dtypeOfOnnx(proto.data_type());
  if (!dtype)
    throw Unsupported{"tensor '" + proto.name() + "' has unsupported dtype " +
                      onnxTypeName(proto.data_type())};
  Shape shape(proto.dims().begin(), proto.dims().end());
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || (dim > 0 && count > INT64_MAX / dim / 8))
      throw Unsupported{"tensor '" + proto.name() + "' has bad dims"};
    count *= dim;
  }
  int64_t bytes = count * static_cast<int64_t>(dtypeBytes(*dtype));
  // 4- and 2-bit elements come packed, the first in the lowest bits: fusec
  // holds each in a byte of its own.
  const int bits = dtypeInfo(*dtype).bits;
  const int perByte = bits < 8 ? 8 / bits : 1;
  auto unpacked = [&](auto packedByte) {
    Tensor tensor(*dtype, shape);
    for (int64_t i = 0; i < count; ++i) {
      uint32_t field = static_cast<uint8_t>(packedByte(i / perByte));
      uint32_t code = (field >> (bits * (i % perByte))) & ((1u << bits) - 1);
      if (isFloat(*dtype))
        tensor.as<uint8_t>()[i] = static_cast<uint8_t>(code);
      else
        tensor.set(i, code); // the signed ones wrap to negative values
    }
    return tensor;
  };
  auto sizeError = [&](const std::string &field, int64_t have) {
    return Unsupported{"tensor '" + proto.name() + "' dims [" +
                       formatShape(shape) + "] need " + std::to_string(count) +
                       " elements but " + field + " holds " +
                       std::to_string(have)};
  };
  const int64_t packedBytes =
      perByte > 1 ? (count + perByte - 1) / perByte : bytes;
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    // The file's size is checked first: nothing is allocated for dims the
    // file cannot hold.
    TensorBytes data = readExternalData(proto, modelDir, packedBytes);
    if (perByte > 1)
      return unpacked([&](int64_t at) { return data[at]; });
    Tensor tensor(*dtype, {});
    tensor.shape = shape;
    tensor.bytes = std::move(data);
    return tensor;
  }
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != packedBytes)
      throw sizeError("raw_data (bytes)",
                      static_cast<int64_t>(proto.raw_data().size()));
    if (perByte > 1)
      return unpacked([&](int64_t at) { return proto.raw_data()[at]; });
    Tensor tensor(*dtype, shape);
    if (bytes > 0) // an empty tensor's data() may be null
      std::memcpy(tensor.data(), proto.raw_data().data(), bytes);
    return tensor;
  }
  // Typed fields: f16/bf16 and float8 bits, i8, i16, u8, u16 and bool live
  // in int32_data (4- and 2-bit elements packed as in raw_data), u32 and u64
  // in uint64_data.
  if (perByte > 1) {
    if (static_cast<int64_t>(proto.int32_data_size()) != packedBytes)
      throw sizeError("int32_data (packed bytes)", proto.int32_data_size());
    return unpacked([&](int64_t at) { return proto.int32_data(at); });
  }
  auto fill = [&](const auto &field, const std::string &name) {
    if (static_cast<int64_t>(field.size()) != count)
      throw sizeError(name, field.size());
    Tensor tensor(*dtype, shape);
    for (int64_t i = 0; i < count; ++i) {
      if (*dtype == DType::F16 || *dtype == DType::BF16)
        tensor.as<uint16_t>()[i] = static_cast<uint16_t>(field.Get(i));
      else if (isNarrow(*dtype) && isFloat(*dtype))
        tensor.as<uint8_t>()[i] = static_cast<uint8_t>(field.Get(i));
      else if (*dtype == DType::I64)
        tensor.as<int64_t>()[i] = static_cast<int64_t>(field.Get(i));
      else if (*dtype == DType::U64)
        tensor.as<uint64_t>()[i] = static_cast<uint64_t>(field.Get(i));
      else
        tensor.set(i, static_cast<double>(field.Get(i)));
    }
    return tensor;
  };
  switch (*dtype) {
  case DType::F32:
    return fill(proto.float_data(), "float_data");
  case DType::F64:
    return fill(proto.double_data(), "double_data");
  case DType::I64:
    return fill(proto.int64_data(), "int64_data");
  case DType::U32:
  case DType::U64:
    return fill(proto.uint64_data(), "uint64_data");
  default:
    return fill(proto.int32_data(), "int32_data");
  }
}

/// Integers of a constant tensor (shapes, axes, bounds), exact.
/// `axis` counted from 0, or an Unsupported when it is outside
/// [-rank, rank) (negative axes count from the end).
int64_t resolvedAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    throw Unsupported{"axis " + std::to_string(axis) +
                      " is out of range for rank " + std::to_string(rank)};
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> integersOf(const Tensor &tensor, const std::string &what) {
  std::vector<int64_t> values(tensor.numElements());
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    if (tensor.dtype == DType::I64)
      values[i] = tensor.as<int64_t>()[i];
    else if (tensor.dtype == DType::I32)
      values[i] = tensor.as<int32_t>()[i];
    else
      throw Unsupported{what + " must be an int32 or int64 tensor, not " +
                        std::string(dtypeName(tensor.dtype))};
  }
  return values;
}

class OnnxConverter;
using Convert = void (*)(OnnxConverter &, const onnx::NodeProto &, GraphNode &);

/// One supported ONNX op.
struct OnnxOp {
  const char *onnxName;
  /// The graph op it becomes ("" when `convert` decides).
  const char *graphOp;
  /// The attributes read; any other is an error.
  std::vector<std::string> attrs;
  /// Inputs read as attributes of the graph node: (index, attr name),
  /// optionally only from an opset on.
  struct ConstantInput {
    size_t index;
    const char *attr;
    int64_t sinceOpset = 0;
  };
  std::vector<ConstantInput> constantInputs;
  /// Op-specific checks and rewrites after the generic conversion.
  Convert convert = nullptr;
  /// The first default-domain opset fusec reads the op from, where later
  /// than opsetVersionRead allows.
  int64_t sinceOpset = kOldestOpset;
};

/// Why fusec does not read the version of `opType` in default-domain
/// `opset` ("" when it does). An op's versions before opset 11 are read where
/// they compute what the newer ones do on the attributes and inputs fusec
/// takes: legacy attributes (consumed_inputs, broadcast, axis, is_test, ...)
/// are refused by each op's list of attributes. The ops below changed meaning
/// without such an attribute, so only their later versions are read.
std::string opsetVersionProblem(const std::string &opType, int64_t opset) {
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(opType, static_cast<int>(opset), "");
  if (schema && schema->Deprecated())
    return opType + " is deprecated in opset " + std::to_string(opset);
  if (opset >= kMinOpset)
    return "";
  if (!schema)
    return opType + " is not defined in opset " + std::to_string(opset);
  static const std::map<std::string, std::pair<int, const char *>>
      kOldestVersionRead = {
          {"BatchNormalization", {6, "it requires consumed_inputs"}},
          {"Cast", {6, "its 'to' is a string"}},
          {"Clip", {6, "it takes consumed_inputs"}},
          {"Concat", {4, "its axis is optional"}},
          {"Pad", {2, "its pads are 'paddings'"}},
          {"Reshape", {5, "the shape is an attribute"}},
          {"Resize", {11, "its coordinate transformation is not given"}},
          {"Split", {2, "split is an input"}},
          {"Tile", {6, "it takes tiles and axis inputs"}}};
  auto oldest = kOldestVersionRead.find(opType);
  if (oldest == kOldestVersionRead.end() ||
      schema->since_version() >= oldest->second.first)
    return "";
  return opType + " of opset " + std::to_string(opset) + " (version " +
         std::to_string(schema->since_version()) +
         ") is not supported: " + oldest->second.second +
         "; fusec reads version " + std::to_string(oldest->second.first) +
         " on";
}

class OnnxConverter {
public:
  OnnxConverter(std::string path, const OnnxOptions &options)
      : path(std::move(path)), options(options),
        modelDir(std::filesystem::path(this->path).parent_path()) {
    if (modelDir.empty())
      modelDir = ".";
  }

  Graph convert(const onnx::ModelProto &model);

  int64_t opset = 0;

  /// The constant value of `name`, or null when it is computed at run time.
  const Tensor *constantOrNull(const std::string &name) const {
    auto it = constants.find(name);
    return it == constants.end() ? nullptr : &it->second;
  }

  /// The constant value of `name`, or an Unsupported naming what needed it.
  const Tensor &constantValue(const std::string &name,
                              const std::string &what) const {
    auto it = constants.find(name);
    if (it == constants.end())
      throw Unsupported{what + " ('" + name +
                        "') must be a constant (an initializer or a Constant "
                        "node's output)"};
    return it->second;
  }

  /// LayerNormalization's optional Mean and InvStdDev outputs (f32, the
  /// normalized dims kept as 1s), as reductions next to the layer_norm.
  void addLayerNormStatistics(const onnx::NodeProto &proto,
                              const GraphNode &node);

  /// The static shape of `name` (graph input, inferred or constant).
  std::optional<Shape> shapeOf(const std::string &name) const;
  /// The dtype of `name` (graph input, constant or inferred).
  std::optional<DType> dtypeOf(const std::string &name) const;
  /// Records the shape and dtype of a value converted here that ONNX's
  /// inference left unknown, for the converters after it that need them.
  void recordValue(const std::string &name, const Shape &shape, DType dtype) {
    inferredShapes.emplace(name, shape);
    inferredTypes.emplace(name, dtype);
  }
  /// Both, or an Unsupported naming the value and what needed it.
  Shape requireShape(const std::string &name, const std::string &what) const;
  DType requireDType(const std::string &name, const std::string &what) const;

  /// A step of a conversion that becomes several graph nodes: a node named
  /// after `owner`, whose output is owner's first output + "_" + suffix
  /// (returned). Steps precede the owner node in the graph.
  std::string addStep(const GraphNode &owner, const std::string &op,
                      std::vector<std::string> inputs,
                      const std::string &suffix,
                      std::map<std::string, AttrValue> attrs = {});
  /// A step whose output is `output` itself: one of owner's own outputs
  /// other than the first.
  void addOutputStep(const GraphNode &owner, const std::string &op,
                     std::vector<std::string> inputs, const std::string &output,
                     std::map<std::string, AttrValue> attrs = {});
  /// A constant named after `owner`'s first output + "_" + suffix.
  std::string addStepConstant(const GraphNode &owner, const std::string &suffix,
                              Tensor value);

  /// Ops converted by a member of their own rather than a kOnnxOps row
  /// (they emit several nodes, constants or aliases).
  using SpecialConvert = void (OnnxConverter::*)(const onnx::NodeProto &);
  static const std::vector<std::pair<const char *, SpecialConvert>> &
  specialOps();

private:
  void inferShapes(const onnx::ModelProto &model);
  /// Outputs of nodes ONNX 1.12's inference left out (newer opsets' ops it
  /// has no opset-17 form for); inference runs again once the converter has
  /// learned one of them.
  std::set<std::string> uninferredOutputs;
  void convertConstant(const onnx::NodeProto &node);
  void convertIdentity(const onnx::NodeProto &node);
  bool foldToConstants(const onnx::NodeProto &node);
  bool foldShapeNode(const onnx::NodeProto &node);
  void convertSplit(const onnx::NodeProto &node);
  /// Broadcasting before opset 7 with `axis`: the second operand's dims
  /// match the first's from `axis` on (a view with 1s around them).
  void broadcastFromAxis(GraphNode &node, int64_t axis);
  void convertShapeOrSize(const onnx::NodeProto &node);
  void convertDropout(const onnx::NodeProto &node);
  void convertPow(const onnx::NodeProto &node);
  void convertConstantOfShape(const onnx::NodeProto &node);
  void convertRange(const onnx::NodeProto &node);
  void convertNode(const onnx::NodeProto &node);
  /// A node of the model or of a subgraph: folded to constants where its
  /// inputs allow, converted otherwise.
  void convertOrFold(const onnx::NodeProto &node);
  /// Control flow, unrolled: fusec's shapes are static, so If's taken
  /// branch, Loop's trip count and Scan's length must be known here (a
  /// runtime If condition selects between both branches' outputs).
  void convertIf(const onnx::NodeProto &node);
  void convertLoop(const onnx::NodeProto &node);
  void convertScan(const onnx::NodeProto &node);
  /// Converts a subgraph's nodes in place, its own values renamed under
  /// `scope` (sibling branches and unrolled iterations reuse names), its
  /// inputs standing for `inputs`; returns the values of its outputs.
  std::vector<std::string>
  convertSubgraph(const onnx::GraphProto &body, const std::string &scope,
                  const std::vector<std::string> &inputs,
                  const std::string &what);
  /// What unrolling has added so far (subgraph nodes, iterations,
  /// initializer bytes), against kMaxUnrolledNodes; throws past it.
  size_t unrolled = 0;
  void chargeUnrolling(size_t units);
  /// A scope of its own for each control-flow node converted (a node inside
  /// a loop body is converted once per iteration, under one name).
  size_t scopes = 0;
  std::string newScope(const onnx::NodeProto &node) {
    const std::string &base =
        !node.name().empty()                                ? node.name()
        : node.output_size() > 0 && !node.output(0).empty() ? node.output(0)
                                                            : node.op_type();
    return base + "#" + std::to_string(scopes++);
  }
  /// A subgraph's initializers by their own name: the constants made of
  /// them, reused by later iterations that hold the same value.
  std::map<std::string, std::vector<std::string>> subgraphConstants;
  /// An op defined as a composition of other ONNX ops (as ONNX defines its
  /// functions): one node of it, converted at once; its output is `output`
  /// or a fresh name under the owner's.
  std::string expand(const onnx::NodeProto &owner, const std::string &op,
                     const std::vector<std::string> &inputs,
                     std::vector<onnx::AttributeProto> attrs = {},
                     const std::string &output = "");
  std::string expandConstant(const onnx::NodeProto &owner, Tensor value);
  size_t expandedNodes = 0;
  void convertCausalConvWithState(const onnx::NodeProto &node);
  void convertLinearAttention(const onnx::NodeProto &node);
  static bool isVariadic(const std::string &opType);
  void convertVariadic(const onnx::NodeProto &node, const GraphNode &pattern);
  void addConstant(const std::string &name, Tensor value) {
    constants[name] = value;
    graph.constants.push_back({name, std::move(value)});
  }
  std::string resolve(const std::string &name) const {
    auto it = aliases.find(name);
    return it == aliases.end() ? name : it->second;
  }

  std::string path;
  const OnnxOptions &options;
  std::filesystem::path modelDir;
  Graph graph;
  std::map<std::string, Tensor> constants;
  /// Identity outputs: the value they stand for.
  std::map<std::string, std::string> aliases;
  /// From ONNX's shape inference with data propagation: static shapes of
  /// values, and the values of shape computations (Shape -> Gather ->
  /// Concat -> ...), which become constants.
  std::map<std::string, Shape> inferredShapes;
  std::map<std::string, std::vector<int64_t>> shapeValues;
  std::map<std::string, DType> inferredTypes;
  /// The types of converted values ONNX's inference left unknown, from the
  /// fuse ops they became (made on the first such value).
  mutable std::unique_ptr<fuse::GraphValueTypes> convertedTypes;
  std::optional<std::pair<DType, Shape>>
  convertedTypeOf(const std::string &name) const {
    if (!convertedTypes)
      convertedTypes = std::make_unique<fuse::GraphValueTypes>(graph);
    return convertedTypes->typeOf(resolve(name));
  }
  /// namesUsedAsConstants: the values that must be constants.
  std::set<std::string> boundNames;
  std::vector<std::string> errors;
};

/// A reshape step of `value` to `shape` (a 0 is a dim of 0).
std::string viewStep(OnnxConverter &converter, const GraphNode &node,
                     const std::string &value, const Shape &shape,
                     const std::string &suffix) {
  return converter.addStep(
      node, "reshape", {value}, suffix,
      {{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
       {"allowzero", int64_t(1)}});
}

/// `node` itself becomes a reshape of its (rewritten) input to `shape`.
void becomeView(GraphNode &node, const std::string &value, const Shape &shape) {
  node.op = "reshape";
  node.inputs = {value};
  node.attrs = {{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
                {"allowzero", int64_t(1)}};
}

/// The 2-D view ONNX's ops before opset 13 coerce their input to around
/// `axis`: [prod(dims before axis), prod(dims from axis on)].
Shape viewAs2D(const Shape &shape, int64_t axis) {
  Shape view = {1, 1};
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    view[d < axis ? 0 : 1] *= shape[d];
  return view;
}

/// Softmax and LogSoftmax before opset 13 coerce their input to 2-D around
/// `axis` (default 1) and normalize over all the dims from `axis` on: the
/// op runs on that 2-D view along its last axis and the result is viewed
/// back. (From opset 13 `axis`, default -1, is the one axis.)
void coerceTo2DBeforeOpset13(OnnxConverter &converter,
                             const onnx::NodeProto &proto, GraphNode &node) {
  if (converter.opset >= 13)
    return;
  auto it = node.attrs.find("axis");
  int64_t axis = it == node.attrs.end() ? 1 : std::get<int64_t>(it->second);
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, proto.op_type());
  int64_t rank = shape.size();
  axis = resolvedAxis(axis, rank);
  if (axis == rank - 1) { // the 2-D view changes nothing
    node.attrs["axis"] = int64_t(-1);
    return;
  }
  std::string coerced =
      viewStep(converter, node, x, viewAs2D(shape, axis), "coerced");
  std::string normalized = converter.addStep(node, node.op, {coerced}, "rows",
                                             {{"axis", int64_t(1)}});
  becomeView(node, normalized, shape);
}

/// Cast's and CastLike's saturate (opset 19) applies to float8 targets, and
/// round_mode (24) to float8e8m0: the cast keeps them (fuse.cast's
/// non_saturating and round_mode).
void keepSaturate(GraphNode &node) {
  if (auto mode = node.attrs.find("round_mode"); mode != node.attrs.end()) {
    const std::string &name = std::get<std::string>(mode->second);
    if (name != "up" && name != "down" && name != "nearest")
      throw Unsupported{"round_mode must be up, down or nearest, not '" + name +
                        "'"};
  }
  auto it = node.attrs.find("saturate");
  if (it == node.attrs.end())
    return;
  int64_t saturate = std::get<int64_t>(it->second);
  if (saturate != 0 && saturate != 1)
    throw Unsupported{"saturate must be 0 or 1, not " +
                      std::to_string(saturate)};
}

/// Cast's and BitCast's attribute `to`, as the graph op's "dtype".
void targetDType(GraphNode &node, const std::string &opType) {
  auto it = node.attrs.find("to");
  if (it == node.attrs.end())
    throw Unsupported{opType + " needs attribute 'to'"};
  int32_t to = static_cast<int32_t>(std::get<int64_t>(it->second));
  std::optional<DType> dtype = dtypeOfOnnx(to);
  if (!dtype)
    throw Unsupported{opType + " to " + onnxTypeName(to) + " is not supported"};
  node.attrs.erase(it);
  node.attrs["dtype"] = std::string(dtypeName(*dtype));
}

void castTarget(OnnxConverter &, const onnx::NodeProto &, GraphNode &node) {
  keepSaturate(node);
  targetDType(node, "Cast");
}

/// BitCast (opset 26): the bits read as `to`, of the same width (checked by
/// the op's verifier, which names both dtypes).
void bitcastTarget(OnnxConverter &, const onnx::NodeProto &, GraphNode &node) {
  targetDType(node, "BitCast");
}

/// LayerNormalization's, RMSNormalization's and GroupNormalization's
/// stash_type: fusec computes their statistics in f32 (f64 for f64 input).
void dropStashType(GraphNode &node, const std::string &opType) {
  auto stash = node.attrs.find("stash_type");
  if (stash == node.attrs.end())
    return;
  if (std::get<int64_t>(stash->second) != onnx::TensorProto::FLOAT)
    throw Unsupported{opType + " stash_type must be 1 (float)"};
  node.attrs.erase(stash);
}

void layerNormOutputs(OnnxConverter &converter, const onnx::NodeProto &proto,
                      GraphNode &node) {
  node.outputs.resize(1);
  converter.addLayerNormStatistics(proto, node);
  dropStashType(node, proto.op_type());
}

/// Pad's pads (its input 1, read as an attribute): two per dim.
std::vector<int64_t> padsOf(const GraphNode &node, int64_t rank) {
  auto it = node.attrs.find("pads");
  if (it == node.attrs.end())
    throw Unsupported{"Pad needs its pads input"};
  std::vector<int64_t> pads = std::get<std::vector<int64_t>>(it->second);
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    throw Unsupported{
        "Pad needs two pads per dim: " + std::to_string(pads.size()) +
        " for an input of rank " + std::to_string(rank)};
  return pads;
}

/// Pad modes edge, reflect and wrap: a gather along each padded axis, by a
/// constant index per output position (clamped to the ends, reflected
/// about them with period 2 * (dim - 1), as NumPy's pad repeats it, or
/// wrapped around with period dim).
void padByGather(OnnxConverter &converter, GraphNode &node,
                 const std::string &mode) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, "Pad");
  int64_t rank = shape.size();
  std::vector<int64_t> pads = padsOf(node, rank);
  std::string value = x;
  std::vector<std::pair<int64_t, Tensor>> gathers;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t before = pads[d], after = pads[d + rank], dim = shape[d];
    if (before == 0 && after == 0)
      continue;
    auto outOfRange = [](int64_t pad) {
      return pad < -INT32_MAX || pad > INT32_MAX;
    };
    if (outOfRange(before) || outOfRange(after) || dim + before + after < 0)
      throw Unsupported{"Pad's pads on axis " + std::to_string(d) +
                        " are out of range"};
    int64_t length = dim + before + after;
    if (dim == 0 && length > 0)
      throw Unsupported{"Pad mode '" + mode + "' has nothing to repeat on " +
                        "the empty axis " + std::to_string(d)};
    Tensor index(DType::I64, {length});
    int64_t period = 2 * (dim - 1);
    for (int64_t j = 0; j < length; ++j) {
      int64_t source = j - before;
      if (mode == "wrap") {
        source = ((source % dim) + dim) % dim;
      } else if (mode == "edge" || dim == 1) {
        source = std::clamp<int64_t>(source, 0, dim - 1);
      } else {
        source = ((source % period) + period) % period;
        if (source >= dim)
          source = period - source;
      }
      index.as<int64_t>()[j] = source;
    }
    gathers.emplace_back(d, std::move(index));
  }
  node.attrs.clear();
  if (gathers.empty()) { // nothing to pad: the input's elements, as they are
    node.op = "reshape";
    node.attrs = {{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
                  {"allowzero", int64_t(1)}};
    return;
  }
  for (size_t i = 0; i < gathers.size(); ++i) {
    auto &[axis, index] = gathers[i];
    std::string suffix = "axis" + std::to_string(axis);
    std::string indices =
        converter.addStepConstant(node, suffix + "_index", std::move(index));
    if (i + 1 == gathers.size()) {
      node.op = "gather";
      node.inputs = {value, indices};
      node.attrs = {{"axis", axis}};
    } else {
      value = converter.addStep(node, "gather", {value, indices}, suffix,
                                {{"axis", axis}});
    }
  }
}

void modKind(OnnxConverter &, const onnx::NodeProto &, GraphNode &node) {
  auto it = node.attrs.find("fmod");
  if (it == node.attrs.end())
    return;
  const int64_t *fmod = std::get_if<int64_t>(&it->second);
  if (!fmod || (*fmod != 0 && *fmod != 1))
    throw Unsupported{"Mod's fmod must be the integer 0 or 1"};
  node.op = *fmod ? "fmod" : "mod";
  node.attrs.erase(it);
}

void bitShiftDirection(OnnxConverter &, const onnx::NodeProto &,
                       GraphNode &node) {
  auto it = node.attrs.find("direction");
  const std::string *direction =
      it == node.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  if (!direction || (*direction != "LEFT" && *direction != "RIGHT"))
    throw Unsupported{"BitShift's direction must be \"LEFT\" or \"RIGHT\""};
  node.op = *direction == "LEFT" ? "shift_left" : "shift_right";
  node.attrs.erase(it);
}

/// A rank-0 constant of `dtype` holding `value`.
/// The float attribute `name` of `node`, or `fallback` (a float's value, as
/// ONNX's default is).
double floatAttr(const GraphNode &node, const char *name, float fallback) {
  auto it = node.attrs.find(name);
  return it == node.attrs.end() ? fallback : std::get<double>(it->second);
}

/// names[i], or "" where the node has fewer (an optional input or output
/// left out).
std::string nameOrEmpty(const std::vector<std::string> &names, size_t i) {
  return i < names.size() ? names[i] : std::string();
}

/// The integer attribute `name` of `node`, or `fallback`.
int64_t intAttr(const GraphNode &node, const char *name, int64_t fallback) {
  auto it = node.attrs.find(name);
  return it == node.attrs.end() ? fallback : std::get<int64_t>(it->second);
}

Tensor scalarTensor(DType dtype, double value) {
  Tensor tensor(dtype, {});
  tensor.set(0, value);
  return tensor;
}

/// The lowest or highest value of `dtype` (an infinity for floats) as a
/// scalar, exact for 64-bit integers too (which a double is not).
Tensor extremeScalar(DType dtype, bool highest) {
  Tensor tensor(dtype, {});
  const double infinity = std::numeric_limits<double>::infinity();
  const int bits = dtypeInfo(dtype).bits;
  if (isInteger(dtype) && isNarrow(dtype)) { // 4 and 2 bits: exact in double
    double count = std::ldexp(1.0, isUnsigned(dtype) ? bits : bits - 1);
    tensor.set(0, highest ? count - 1 : (isUnsigned(dtype) ? 0 : -count));
    return tensor;
  }
  switch (dtypeInfo(dtype).kind) {
  case DTypeKind::Float:
    tensor.set(0, highest ? infinity : -infinity);
    break;
  case DTypeKind::Bool:
    tensor.set(0, highest ? 1.0 : 0.0);
    break;
  case DTypeKind::UInt:
    std::fill(tensor.bytes.begin(), tensor.bytes.end(), highest ? 0xff : 0);
    break;
  case DTypeKind::Int:
    // Little-endian two's complement: 0x7f ff .. ff and 0x80 00 .. 00.
    std::fill(tensor.bytes.begin(), tensor.bytes.end(), highest ? 0xff : 0);
    tensor.bytes.back() = highest ? 0x7f : 0x80;
    break;
  }
  return tensor;
}

/// Refuses a constant a converter would build of more than 2^26 elements
/// (the dims it derives from may be declared far larger than any data).
void checkConstantElements(int64_t elements, const std::string &what) {
  if (elements < 0)
    throw Unsupported{what + " would have a negative size (" +
                      std::to_string(elements) + ")"};
  if (elements > (int64_t(1) << 26))
    throw Unsupported{what + " would take " + std::to_string(elements) +
                      " elements, more than fusec builds (2^26)"};
}

/// An i64 constant counting 0, 1, ... along `axis` of a tensor of `rank`
/// (dims of 1 elsewhere, broadcast where it is used).
Tensor indicesAlong(int64_t rank, int64_t axis, int64_t count) {
  checkConstantElements(count, "the positions along an axis");
  Shape shape(rank, 1);
  shape[axis] = count;
  Tensor tensor(DType::I64, shape);
  for (int64_t i = 0; i < count; ++i)
    tensor.as<int64_t>()[i] = i;
  return tensor;
}

void castLikeTarget(OnnxConverter &converter, const onnx::NodeProto &,
                    GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[1].empty())
    throw Unsupported{"CastLike takes an input and a target_type tensor"};
  keepSaturate(node);
  DType dtype = converter.requireDType(node.inputs[1], "CastLike");
  node.inputs.resize(1);
  node.attrs["dtype"] = std::string(dtypeName(dtype));
}

/// Trilu: x where the diagonal offset (column - row) is >= k (upper) or
/// <= k (lower), else 0; over the last two dims. The offsets are an i64
/// row and column of indices, so the mask is computed in the kernel, not
/// stored; k may be a runtime value.
void triluMask(OnnxConverter &converter, const onnx::NodeProto &,
               GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, "Trilu");
  DType dtype = converter.requireDType(x, "Trilu");
  int64_t rank = shape.size();
  if (rank < 2)
    throw Unsupported{"Trilu's input must have rank >= 2, not " +
                      std::to_string(rank)};
  bool upper = true;
  if (auto it = node.attrs.find("upper"); it != node.attrs.end()) {
    int64_t value = std::get<int64_t>(it->second);
    if (value != 0 && value != 1)
      throw Unsupported{"Trilu's upper must be 0 or 1"};
    upper = value == 1;
  }
  std::string k;
  if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    k = node.inputs[1];
    std::optional<Shape> kShape = converter.shapeOf(k);
    if (converter.requireDType(k, "Trilu's k") != DType::I64 ||
        (kShape && numElements(*kShape) != 1))
      throw Unsupported{"Trilu's k must be a single int64"};
  } else {
    k = converter.addStepConstant(node, "k", scalarTensor(DType::I64, 0));
  }
  std::string rows = converter.addStepConstant(
      node, "rows", indicesAlong(2, 0, shape[rank - 2]));
  std::string columns = converter.addStepConstant(
      node, "columns", indicesAlong(1, 0, shape[rank - 1]));
  std::string offset =
      converter.addStep(node, "sub", {columns, rows}, "diagonal_offset");
  std::string keep =
      converter.addStep(node, upper ? "ge" : "le", {offset, k}, "keep");
  std::string zero =
      converter.addStepConstant(node, "zero", scalarTensor(dtype, 0));
  node.op = "select";
  node.inputs = {keep, x, zero};
  node.attrs.clear();
}

/// ReduceSumSquare and ReduceL1: a reduce_sum of x * x or |x|.
void sumOfSquares(OnnxConverter &converter, const onnx::NodeProto &,
                  GraphNode &node) {
  const std::string x = node.inputs.at(0);
  node.inputs[0] = converter.addStep(node, "mul", {x, x}, "squared");
}

void sumOfMagnitudes(OnnxConverter &converter, const onnx::NodeProto &,
                     GraphNode &node) {
  node.inputs.at(0) =
      converter.addStep(node, "abs", {node.inputs.at(0)}, "magnitude");
}

/// ReduceLogSum: log of the reduce_sum. Integers sum in f64 (exact up to
/// 2^53, no wrapping) and the log truncates back, as for ReduceL2.
void logOfSum(OnnxConverter &converter, const onnx::NodeProto &,
              GraphNode &node) {
  DType dtype = converter.requireDType(node.inputs.at(0), "ReduceLogSum");
  bool integer = !isFloat(dtype);
  std::vector<std::string> inputs = node.inputs;
  if (integer)
    inputs[0] = converter.addStep(node, "cast", {inputs[0]}, "real",
                                  {{"dtype", std::string("f64")}});
  std::string sum =
      converter.addStep(node, "reduce_sum", inputs, "sum", node.attrs);
  if (!integer) {
    node.op = "log";
    node.inputs = {sum};
    node.attrs.clear();
    return;
  }
  std::string log = converter.addStep(node, "log", {sum}, "log");
  node.op = "cast";
  node.inputs = {log};
  node.attrs = {{"dtype", std::string(dtypeName(dtype))}};
}

/// Mean: the inputs added left to right, divided by their count (in their
/// dtype, as ONNX's reference computes it); f16 and bf16 inputs in f32,
/// rounded once, as one op (the mean of 100.5 and 65504 is 32800 in f16,
/// not the inf of an f16 sum).
void meanOfInputs(OnnxConverter &converter, const onnx::NodeProto &,
                  GraphNode &node) {
  if (node.inputs.empty() ||
      std::count(node.inputs.begin(), node.inputs.end(), std::string()))
    throw Unsupported{"Mean needs one or more inputs"};
  DType dtype = converter.requireDType(node.inputs[0], "Mean");
  bool widened = dtype == DType::F16 || dtype == DType::BF16;
  DType compute = widened ? DType::F32 : dtype;
  auto operand = [&](size_t i) {
    return widened
               ? converter.addStep(node, "cast", {node.inputs[i]},
                                   "wide_" + std::to_string(i),
                                   {{"dtype", std::string(dtypeName(compute))}})
               : node.inputs[i];
  };
  std::string sum = operand(0);
  for (size_t i = 1; i < node.inputs.size(); ++i)
    sum = converter.addStep(node, "add", {sum, operand(i)},
                            "sum_" + std::to_string(i));
  std::string count = converter.addStepConstant(
      node, "count",
      scalarTensor(compute, static_cast<double>(node.inputs.size())));
  if (!widened) {
    node.op = "div";
    node.inputs = {sum, count};
    return;
  }
  node.op = "cast";
  node.inputs = {converter.addStep(node, "div", {sum, count}, "wide")};
  node.attrs = {{"dtype", std::string(dtypeName(dtype))}};
}

/// PRelu: x < 0 ? slope * x : x (slope broadcast to x; NaN stays NaN).
void preluSelect(OnnxConverter &converter, const onnx::NodeProto &,
                 GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[1].empty())
    throw Unsupported{"PRelu takes an input and a slope"};
  const std::string x = node.inputs[0];
  std::string slope = node.inputs[1];
  DType dtype = converter.requireDType(x, "PRelu");
  // Before opset 7 PRelu did not broadcast as NumPy does: its producers
  // (Caffe2, PyTorch) give a slope of [C] per channel, dim 1 of the input.
  if (converter.opset < 7) {
    Shape shape = converter.requireShape(x, "PRelu");
    Shape slopeShape = converter.requireShape(slope, "PRelu");
    if (shape.size() > 2 && slopeShape == Shape{shape[1]}) {
      Shape perChannel(shape.size() - 1, 1);
      perChannel[0] = shape[1];
      slope = viewStep(converter, node, slope, perChannel, "slope_column");
    }
  }
  std::string zero =
      converter.addStepConstant(node, "zero", scalarTensor(dtype, 0));
  std::string negative = converter.addStep(node, "lt", {x, zero}, "negative");
  std::string scaled = converter.addStep(node, "mul", {slope, x}, "scaled");
  node.op = "select";
  node.inputs = {negative, scaled, x};
}

/// Tile: x viewed as [1, d0, 1, d1, ...], broadcast to [r0, d0, r1, d1,
/// ...] and viewed as [r0 * d0, r1 * d1, ...]; nothing is copied until the
/// kernel reads it.
void tileByBroadcast(OnnxConverter &converter, const onnx::NodeProto &,
                     GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, "Tile");
  auto it = node.attrs.find("repeats");
  if (it == node.attrs.end())
    throw Unsupported{"Tile needs its repeats input"};
  std::vector<int64_t> repeats = std::get<std::vector<int64_t>>(it->second);
  if (repeats.size() != shape.size())
    throw Unsupported{
        "Tile needs one repeat per dim: " + std::to_string(repeats.size()) +
        " for an input of rank " + std::to_string(shape.size())};
  std::vector<int64_t> spread, broadcast, tiled;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (repeats[d] < 0)
      throw Unsupported{"Tile's repeats must not be negative"};
    if (shape[d] > 0 && repeats[d] > INT64_MAX / shape[d])
      throw Unsupported{"Tile's result has too many elements"};
    spread.insert(spread.end(), {1, shape[d]});
    broadcast.insert(broadcast.end(), {repeats[d], shape[d]});
    tiled.push_back(repeats[d] * shape[d]);
  }
  // allowzero: a 0 in these shapes is a dim of 0, not "copy the input's".
  std::string spreadOut =
      converter.addStep(node, "reshape", {x}, "spread",
                        {{"shape", spread}, {"allowzero", int64_t(1)}});
  std::string broadcastOut = converter.addStep(
      node, "expand", {spreadOut}, "repeated", {{"shape", broadcast}});
  node.op = "reshape";
  node.inputs = {broadcastOut};
  node.attrs = {{"shape", tiled}, {"allowzero", int64_t(1)}};
}

/// Hardmax: 1 where the element is the first maximum along `axis`, else 0
/// (NaN counts as the maximum, as NumPy's argmax). Before opset 13 the
/// input is coerced to 2-D around `axis` (default 1) and the result viewed
/// back.
void hardmaxOneHot(OnnxConverter &converter, const onnx::NodeProto &,
                   GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, "Hardmax");
  DType dtype = converter.requireDType(x, "Hardmax");
  int64_t rank = shape.size();
  auto it = node.attrs.find("axis");
  int64_t axis = it != node.attrs.end() ? std::get<int64_t>(it->second)
                 : converter.opset < 13 ? 1
                                        : -1;
  axis = resolvedAxis(axis, rank);
  if (numElements(shape) == 0) { // no element to mark
    becomeView(node, x, shape);
    return;
  }
  std::string operand = x;
  Shape operandShape = shape;
  bool coerced = converter.opset < 13 && axis != rank - 1;
  if (coerced) {
    operandShape = viewAs2D(shape, axis);
    operand = viewStep(converter, node, x, operandShape, "coerced");
    axis = 1;
  }
  int64_t operandRank = operandShape.size();
  std::string index =
      converter.addStep(node, "argmax", {operand}, "argmax",
                        {{"axis", axis}, {"keepdims", int64_t(1)}});
  std::string positions = converter.addStepConstant(
      node, "positions", indicesAlong(operandRank, axis, operandShape[axis]));
  std::string hot = converter.addStep(node, "eq", {positions, index}, "hot");
  node.op = "cast";
  node.inputs = {hot};
  node.attrs = {{"dtype", std::string(dtypeName(dtype))}};
  if (coerced)
    becomeView(node,
               converter.addStep(node, "cast", {hot}, "one_hot", node.attrs),
               shape);
}

/// An integer attribute that may have come from a one-element input.
int64_t singleInteger(const AttrValue &value, const std::string &what) {
  if (const int64_t *scalar = std::get_if<int64_t>(&value))
    return *scalar;
  if (const auto *list = std::get_if<std::vector<int64_t>>(&value))
    if (list->size() == 1)
      return (*list)[0];
  throw Unsupported{what + " must be a single integer"};
}

/// CumSum: y[i] = sum of x[j] for j <= i along `axis` (j < i when
/// `exclusive`; j >= i, j > i when `reverse`). A sum over a [L, L] mask of
/// which j each i takes, whose select fuses into the reduction (L * L
/// terms per row). Only the order of the float additions differs from
/// ONNX's running sum. CumProd (opset 26): the same as a product.
void cumulativeSum(OnnxConverter &converter, const onnx::NodeProto &proto,
                   GraphNode &node) {
  const std::string &opType = proto.op_type();
  const bool product = opType == "CumProd";
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, opType);
  DType dtype = converter.requireDType(x, opType);
  int64_t rank = shape.size();
  auto axisAttr = node.attrs.find("axis");
  if (axisAttr == node.attrs.end())
    throw Unsupported{opType + " needs its axis input"};
  int64_t axis = singleInteger(axisAttr->second, opType + "'s axis");
  axis = resolvedAxis(axis, rank);
  auto flag = [&](const char *name) {
    auto it = node.attrs.find(name);
    int64_t value = it == node.attrs.end() ? 0 : std::get<int64_t>(it->second);
    if (value != 0 && value != 1)
      throw Unsupported{opType + "'s " + name + " must be 0 or 1"};
    return value == 1;
  };
  bool exclusive = flag("exclusive"), reverse = flag("reverse");
  int64_t length = shape[axis];
  // x viewed with a dim of 1 for i before its own (now j) dim.
  Shape spread = shape;
  spread.insert(spread.begin() + axis, 1);
  std::string terms = viewStep(converter, node, x, spread, "spread");
  std::string target = converter.addStepConstant(
      node, "target", indicesAlong(rank + 1, axis, length));
  std::string source = converter.addStepConstant(
      node, "source", indicesAlong(rank + 1, axis + 1, length));
  const char *compare =
      reverse ? (exclusive ? "gt" : "ge") : (exclusive ? "lt" : "le");
  std::string taken =
      converter.addStep(node, compare, {source, target}, "taken");
  // Terms left out are -0.0, the float sum's identity, so that a sum of
  // -0.0 stays -0.0 as in ONNX's running sum; but the empty sum that starts
  // an exclusive one is ONNX's +0. A product leaves out 1s.
  Shape alongTarget(rank + 1, 1);
  alongTarget[axis] = length;
  Tensor leftOut(dtype, alongTarget);
  for (int64_t i = 0; i < length; ++i)
    leftOut.set(i, product ? 1.0 : isFloat(dtype) ? -0.0 : 0.0);
  if (exclusive && length > 0 && !product)
    leftOut.set(reverse ? length - 1 : 0, 0.0);
  std::string identity =
      converter.addStepConstant(node, "left_out", std::move(leftOut));
  std::string masked =
      converter.addStep(node, "select", {taken, terms, identity}, "terms");
  node.op = product ? "reduce_prod" : "reduce_sum";
  node.inputs = {masked};
  node.attrs = {{"axes", std::vector<int64_t>{axis + 1}},
                {"keepdims", int64_t(0)}};
}

/// DepthToSpace and SpaceToDepth: a reshape, a transpose and a reshape, as
/// the spec writes them (DepthToSpace's DCR and CRD modes).
void depthToSpace(OnnxConverter &converter, const onnx::NodeProto &proto,
                  GraphNode &node) {
  const bool toSpace = proto.op_type() == "DepthToSpace";
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, proto.op_type());
  if (shape.size() != 4)
    throw Unsupported{proto.op_type() + " takes a 4-D input [N, C, H, W]"};
  auto blockAttr = node.attrs.find("blocksize");
  if (blockAttr == node.attrs.end())
    throw Unsupported{proto.op_type() + " needs its blocksize"};
  int64_t block = std::get<int64_t>(blockAttr->second);
  std::string mode = "DCR";
  if (auto it = node.attrs.find("mode"); it != node.attrs.end())
    mode = std::get<std::string>(it->second);
  if (mode != "DCR" && mode != "CRD")
    throw Unsupported{proto.op_type() + "'s mode must be DCR or CRD, not " +
                      mode};
  const int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
  if (block < 1)
    throw Unsupported{"blocksize must be positive"};
  Shape split, result;
  std::vector<int64_t> perm;
  if (toSpace) {
    if (c % (block * block))
      throw Unsupported{"DepthToSpace's channels (" + std::to_string(c) +
                        ") are not a multiple of blocksize^2"};
    int64_t depth = c / (block * block);
    split = mode == "DCR" ? Shape{n, block, block, depth, h, w}
                          : Shape{n, depth, block, block, h, w};
    perm = mode == "DCR" ? std::vector<int64_t>{0, 3, 4, 1, 5, 2}
                         : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
    result = {n, depth, h * block, w * block};
  } else {
    if (h % block || w % block)
      throw Unsupported{"SpaceToDepth's height and width (" +
                        std::to_string(h) + ", " + std::to_string(w) +
                        ") are not multiples of blocksize"};
    split = {n, c, h / block, block, w / block, block};
    perm = mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4}
                         : std::vector<int64_t>{0, 1, 3, 5, 2, 4};
    result = {n, c * block * block, h / block, w / block};
  }
  std::string blocks = viewStep(converter, node, x, split, "blocks");
  std::string moved =
      converter.addStep(node, "transpose", {blocks}, "moved", {{"perm", perm}});
  becomeView(node, moved, result);
}

/// BatchNormalization: scale * (x - mean) / sqrt(var + epsilon) + B, each
/// parameter a vector along dim 1, in the order ONNX's reference computes
/// it (and its test data was made with). In training mode (opset 14 on)
/// mean and var are the batch's (over every dim but 1; the variance the
/// population's), and the optional outputs are the running statistics,
/// input * momentum + batch's * (1 - momentum).
void batchNormalization(OnnxConverter &converter, const onnx::NodeProto &,
                        GraphNode &node) {
  const bool training = intAttr(node, "training_mode", 0) != 0;
  const double momentum = node.attrs.count("momentum")
                              ? std::get<double>(node.attrs.at("momentum"))
                              : static_cast<double>(0.9f);
  node.attrs.erase("training_mode");
  node.attrs.erase("momentum");
  // Before opset 7, is_test (default 0) chose the batch's statistics;
  // before opset 9, spatial 0 asked for statistics per activation.
  auto flag = [&](const char *name, int64_t fallback) {
    auto it = node.attrs.find(name);
    return it == node.attrs.end() ? fallback : std::get<int64_t>(it->second);
  };
  if ((node.attrs.count("is_test") && converter.opset >= 7) ||
      (node.attrs.count("spatial") && converter.opset >= 9))
    throw Unsupported{"BatchNormalization of opset " +
                      std::to_string(converter.opset) +
                      " has no attribute is_test or spatial"};
  if (converter.opset < 7 && flag("is_test", 0) == 0)
    throw Unsupported{"is_test is 0: BatchNormalization then uses the "
                      "batch's statistics, and fusec compiles inference only"};
  if (flag("spatial", 1) != 1)
    throw Unsupported{"spatial 0 (statistics per activation) is not "
                      "supported"};
  node.attrs.erase("is_test");
  node.attrs.erase("spatial");
  const std::vector<std::string> outputs = node.outputs;
  if (!training &&
      std::count_if(outputs.begin() + 1, outputs.end(),
                    [](const std::string &o) { return !o.empty(); }))
    throw Unsupported{"BatchNormalization's running mean and variance "
                      "outputs exist in training mode only"};
  if (training && outputs.size() > 3)
    throw Unsupported{"BatchNormalization has 3 outputs in training mode "
                      "(opset 14 on: Y, running_mean, running_var)"};
  node.outputs.resize(1);
  if (node.inputs.size() != 5 ||
      std::count(node.inputs.begin(), node.inputs.end(), std::string()))
    throw Unsupported{"BatchNormalization takes X, scale, B, mean and var"};
  const std::string x = node.inputs[0];
  Shape shape = converter.requireShape(x, "BatchNormalization");
  DType dtype = converter.requireDType(x, "BatchNormalization");
  if (shape.size() < 2)
    throw Unsupported{"BatchNormalization's input must have rank >= 2"};
  Shape along(shape.size() - 1, 1);
  along[0] = shape[1];
  // f16 and bf16 compute in f32 and round once (ONNX's reference mixes:
  // its f32 epsilon and momentum widen part of the arithmetic).
  const DType compute =
      isFloat(dtype) && dtypeBytes(dtype) < 4 ? DType::F32 : dtype;
  const std::string computeName = dtypeName(compute);
  std::string input = x;
  if (compute != dtype)
    input = converter.addStep(node, "cast", {x}, "x_wide",
                              {{"dtype", computeName}});
  const char *names[] = {"scale", "B", "mean", "var"};
  std::string params[4];
  for (int i = 0; i < 4; ++i) {
    std::string value = node.inputs[i + 1];
    Shape paramShape = converter.requireShape(value, names[i]);
    if (paramShape != Shape{shape[1]})
      throw Unsupported{std::string("BatchNormalization's ") + names[i] +
                        " must be a vector of the " + std::to_string(shape[1]) +
                        " channels"};
    if (converter.requireDType(value, names[i]) != compute)
      value = converter.addStep(node, "cast", {value},
                                std::string(names[i]) + "_cast",
                                {{"dtype", computeName}});
    params[i] = viewStep(converter, node, value, along,
                         std::string(names[i]) + "_view");
  }
  auto epsilonAttr = node.attrs.find("epsilon");
  double epsilon = epsilonAttr == node.attrs.end()
                       ? static_cast<double>(1e-5f)
                       : std::get<double>(epsilonAttr->second);
  std::string epsilonValue = converter.addStepConstant(
      node, "epsilon", scalarTensor(compute, epsilon));
  if (training) {
    std::vector<int64_t> axes;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      if (d != 1)
        axes.push_back(d);
    std::map<std::string, AttrValue> over = {{"axes", axes},
                                             {"keepdims", int64_t(0)}};
    // The batch's statistics are values of x's dtype (ReduceMean's
    // results), rounded to it as the reference's are.
    auto roundedToInput = [&](const std::string &value) {
      if (compute == dtype)
        return value;
      return converter.addStep(
          node, "cast",
          {converter.addStep(node, "cast", {value}, value + "_narrow",
                             {{"dtype", std::string(dtypeName(dtype))}})},
          value + "_rounded", {{"dtype", computeName}});
    };
    std::string batchMean = roundedToInput(
        converter.addStep(node, "reduce_mean", {input}, "batch_mean", over));
    std::string meanAlong =
        viewStep(converter, node, batchMean, along, "batch_mean_view");
    std::string deviations =
        converter.addStep(node, "sub", {input, meanAlong}, "deviations");
    std::string batchVar = roundedToInput(converter.addStep(
        node, "reduce_mean",
        {converter.addStep(node, "mul", {deviations, deviations}, "squares")},
        "batch_var", over));
    // Running statistics: the input mean and var blended with the batch's
    // (in the compute dtype), in the input's dtype.
    for (int i : {1, 2}) {
      if (static_cast<int>(outputs.size()) <= i || outputs[i].empty())
        continue;
      const std::string name = names[i + 1];
      DType outputType = converter.requireDType(node.inputs[i + 2], name);
      auto scaled = [&](const std::string &value, double factor,
                        const std::string &suffix) {
        return converter.addStep(
            node, "mul",
            {value, converter.addStepConstant(node, name + "_" + suffix,
                                              scalarTensor(compute, factor))},
            name + "_" + suffix + "_part");
      };
      std::string running = viewStep(converter, node, params[i + 1],
                                     Shape{shape[1]}, name + "_vector");
      std::string blend = converter.addStep(
          node, "add",
          {scaled(running, momentum, "momentum"),
           scaled(i == 1 ? batchMean : batchVar, 1.0 - momentum, "rest")},
          name + "_running");
      converter.addOutputStep(node, "cast", {blend}, outputs[i],
                              {{"dtype", std::string(dtypeName(outputType))}});
    }
    params[2] = meanAlong;
    params[3] = viewStep(converter, node, batchVar, along, "batch_var_view");
  }
  // x - mean, and scale times it, are x's dtype where their operands are
  // (ops of T, each rounded; a wider parameter widens them, as NumPy
  // promotes); the rest is the compute dtype (epsilon is an f32 attribute).
  auto ofInput = [&](const std::string &value) {
    return converter.addStep(node, "cast", {value}, value + "_narrow",
                             {{"dtype", std::string(dtypeName(dtype))}});
  };
  auto widened = [&](const std::string &value) {
    return converter.addStep(node, "cast", {value}, value + "_wide",
                             {{"dtype", computeName}});
  };
  const bool narrowCentered =
      compute != dtype &&
      (training || converter.requireDType(node.inputs[3], "mean") == dtype);
  const bool narrowScaled =
      narrowCentered &&
      converter.requireDType(node.inputs[1], "scale") == dtype;
  std::string centered =
      narrowCentered
          ? converter.addStep(node, "sub", {ofInput(input), ofInput(params[2])},
                              "centered")
          : converter.addStep(node, "sub", {input, params[2]}, "centered");
  std::string scaled =
      narrowScaled
          ? widened(converter.addStep(node, "mul",
                                      {ofInput(params[0]), centered}, "scaled"))
          : converter.addStep(
                node, "mul",
                {params[0], narrowCentered ? widened(centered) : centered},
                "scaled");
  std::string shifted =
      converter.addStep(node, "add", {params[3], epsilonValue}, "var_eps");
  std::string deviation =
      converter.addStep(node, "sqrt", {shifted}, "deviation");
  std::string normalized =
      converter.addStep(node, "div", {scaled, deviation}, "normalized");
  if (compute == dtype) {
    node.op = "add";
    node.inputs = {normalized, params[1]};
  } else {
    node.op = "cast";
    node.inputs = {
        converter.addStep(node, "add", {normalized, params[1]}, "shifted")};
  }
  node.attrs = {};
  if (compute != dtype)
    node.attrs["dtype"] = std::string(dtypeName(dtype));
}

/// MeanVarianceNormalization, as its function body: (x - E[x]) /
/// (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes` (default [0, 2, 3]).
void meanVarianceNormalization(OnnxConverter &converter,
                               const onnx::NodeProto &, GraphNode &node) {
  const std::string x = node.inputs.at(0);
  DType dtype = converter.requireDType(x, "MeanVarianceNormalization");
  std::vector<int64_t> axes = {0, 2, 3};
  if (auto it = node.attrs.find("axes"); it != node.attrs.end())
    axes = std::get<std::vector<int64_t>>(it->second);
  std::map<std::string, AttrValue> over = {{"axes", axes},
                                           {"keepdims", int64_t(1)}};
  std::string mean = converter.addStep(node, "reduce_mean", {x}, "mean", over);
  std::string meanSquared =
      converter.addStep(node, "mul", {mean, mean}, "mean_squared");
  std::string squares = converter.addStep(node, "mul", {x, x}, "squares");
  std::string meanOfSquares = converter.addStep(node, "reduce_mean", {squares},
                                                "mean_of_squares", over);
  std::string variance =
      converter.addStep(node, "sub", {meanOfSquares, meanSquared}, "variance");
  std::string deviation =
      converter.addStep(node, "sqrt", {variance}, "deviation");
  std::string epsilon = converter.addStepConstant(
      node, "epsilon", scalarTensor(dtype, static_cast<double>(1e-9f)));
  std::string denominator =
      converter.addStep(node, "add", {deviation, epsilon}, "denominator");
  std::string centered = converter.addStep(node, "sub", {x, mean}, "centered");
  node.op = "div";
  node.inputs = {centered, denominator};
  node.attrs.clear();
}

/// The operands of GatherElements' flat gather: the data viewed as 1-D and
/// each position's linear index into it.
struct FlatGather {
  std::string flatData, linearIndices;
};

FlatGather flatGatherOperands(OnnxConverter &converter, const GraphNode &node,
                              const std::string &data,
                              const std::string &indices, DType indexType,
                              const Shape &shape, const Shape &indexShape,
                              int64_t axis) {
  int64_t rank = shape.size();
  if (rank == 0 || static_cast<int64_t>(indexShape.size()) != rank)
    throw Unsupported{"GatherElements' indices must have the data's rank (" +
                      std::to_string(rank) + ", not " +
                      std::to_string(indexShape.size()) + ")"};
  axis = resolvedAxis(axis, rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indexShape[d] > shape[d])
      throw Unsupported{"GatherElements' indices dim " + std::to_string(d) +
                        " (" + std::to_string(indexShape[d]) +
                        ") exceeds the data's (" + std::to_string(shape[d]) +
                        ")"};
  auto i64Constant = [&](const std::string &suffix, int64_t value) {
    return converter.addStepConstant(node, suffix,
                                     scalarTensor(DType::I64, value));
  };
  std::string index = indices;
  if (indexType != DType::I64)
    index = converter.addStep(node, "cast", {indices}, "index",
                              {{"dtype", std::string("i64")}});
  const int64_t dim = shape[axis];
  std::string zero = i64Constant("zero", 0);
  std::string wrapped = converter.addStep(
      node, "add", {index, i64Constant("dim", dim)}, "wrapped");
  std::string negative = converter.addStep(node, "lt", {index, zero}, "neg");
  std::string along =
      converter.addStep(node, "select", {negative, wrapped, index}, "along");
  std::string inRange = converter.addStep(
      node, "and",
      {converter.addStep(node, "ge", {along, zero}, "above"),
       converter.addStep(node, "lt", {along, i64Constant("end", dim)},
                         "below")},
      "in_range");
  // linear = sum over d of c[d] * stride[d], with c[axis] = along.
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 1; d > 0; --d)
    strides[d - 1] = strides[d] * shape[d];
  std::string linear = converter.addStep(
      node, "mul", {along, i64Constant("axis_stride", strides[axis])},
      "offset");
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis || indexShape[d] == 1)
      continue;
    Tensor offsets = indicesAlong(rank, d, indexShape[d]);
    for (int64_t i = 0; i < indexShape[d]; ++i)
      offsets.as<int64_t>()[i] *= strides[d];
    linear = converter.addStep(
        node, "add",
        {linear, converter.addStepConstant(node, "offsets_" + std::to_string(d),
                                           offsets)},
        "linear_" + std::to_string(d));
  }
  const int64_t count = numElements(shape);
  std::string safe = converter.addStep(
      node, "select", {inRange, linear, i64Constant("past_end", count)},
      "safe");
  return {viewStep(converter, node, data, Shape{count}, "flat"), safe};
}

/// GatherElements: out[c] = data[c with c[axis] = indices[c]], as a gather
/// from the flattened data at each position's linear index. A negative
/// index counts from the end; one out of range selects 0, as Gather's do
/// (it is pointed past the end rather than at another element).
void gatherElementsFlat(OnnxConverter &converter, const onnx::NodeProto &,
                        GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"GatherElements takes data and indices"};
  const std::string data = node.inputs[0], indices = node.inputs[1];
  int64_t axis = 0;
  if (auto it = node.attrs.find("axis"); it != node.attrs.end())
    axis = std::get<int64_t>(it->second);
  FlatGather operands = flatGatherOperands(
      converter, node, data, indices,
      converter.requireDType(indices, "GatherElements"),
      converter.requireShape(data, "GatherElements"),
      converter.requireShape(indices, "GatherElements"), axis);
  node.op = "gather";
  node.inputs = {operands.flatData, operands.linearIndices};
  node.attrs = {{"axis", int64_t(0)}};
}

/// AffineGrid: theta [N, 2, 3] (or [N, 3, 4]) applied to the normalized
/// positions of an output of `size` [N, C, (D,) H, W], homogeneous (x, y,
/// (z,) 1), as ONNX's reference computes it: the positions in f64 (NumPy's
/// arange), theta widened to f64, one matmul, the result rounded to theta's
/// dtype.
void affineGrid(OnnxConverter &converter, const onnx::NodeProto &,
                GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"AffineGrid takes theta and size"};
  const std::string theta = node.inputs[0];
  std::vector<int64_t> size = integersOf(
      converter.constantValue(node.inputs[1], "input 1 (size)"), "size");
  const bool alignCorners = intAttr(node, "align_corners", 0) != 0;
  if (size.size() != 4 && size.size() != 5)
    throw Unsupported{"AffineGrid's size must be [N, C, H, W] or [N, C, D, "
                      "H, W]"};
  const int64_t spatial = size.size() - 2;
  Shape thetaShape = converter.requireShape(theta, "AffineGrid");
  DType dtype = converter.requireDType(theta, "AffineGrid");
  if (thetaShape != Shape{size[0], spatial, spatial + 1})
    throw Unsupported{"AffineGrid's theta must be [" + std::to_string(size[0]) +
                      ", " + std::to_string(spatial) + ", " +
                      std::to_string(spatial + 1) + "] for that size"};
  // The positions become a constant: their count is bounded before it is
  // multiplied out (2^26, as every constant a converter builds).
  int64_t positions = 1;
  for (int64_t d = 2; d < static_cast<int64_t>(size.size()); ++d) {
    if (size[d] <= 0 || size[d] > (int64_t(1) << 26) / positions)
      throw Unsupported{"AffineGrid's size dims must be positive, with at "
                        "most 2^26 positions in all"};
    positions *= size[d];
  }
  checkConstantElements(positions * (spatial + 1), "AffineGrid's positions");
  // Row p of the transposed grid: (x, y, (z,) 1) of position p; x runs
  // along the last dim.
  Tensor grid(DType::F64, {spatial + 1, positions});
  for (int64_t p = 0; p < positions; ++p) {
    int64_t rest = p;
    for (int64_t k = 0; k < spatial; ++k) {
      const int64_t dim = size[size.size() - 1 - k];
      const int64_t i = rest % dim;
      rest /= dim;
      double coordinate;
      // NumPy's arange: start + i * ((start + step) - start).
      const double step = alignCorners ? 2.0 / (dim - 1) : 2.0 / dim;
      const double start = alignCorners ? -1.0 : -1.0 + step / 2;
      coordinate = alignCorners && dim == 1
                       ? -1.0
                       : start + i * ((start + step) - start);
      grid.set(k * positions + p, coordinate);
    }
    grid.set(spatial * positions + p, 1.0);
  }
  std::string wide = theta;
  if (dtype != DType::F64)
    wide = converter.addStep(node, "cast", {theta}, "theta_f64",
                             {{"dtype", std::string("f64")}});
  std::string product = converter.addStep(
      node, "matmul", {wide, converter.addStepConstant(node, "grid", grid)},
      "product");
  std::string moved =
      converter.addStep(node, "transpose", {product}, "moved",
                        {{"perm", std::vector<int64_t>{0, 2, 1}}});
  if (dtype != DType::F64)
    moved = converter.addStep(node, "cast", {moved}, "rounded",
                              {{"dtype", std::string(dtypeName(dtype))}});
  Shape result = {size[0]};
  for (int64_t d = 2; d < static_cast<int64_t>(size.size()); ++d)
    result.push_back(size[d]);
  result.push_back(spatial);
  becomeView(node, moved, result);
}

/// ReverseSequence: along time_axis, each batch entry's first
/// sequence_lens[b] elements reversed and the rest kept, as a GatherElements
/// of x by index = t < len ? len - 1 - t : t (len clamped as ONNX's
/// reference slices it).
void reverseSequence(OnnxConverter &converter, const onnx::NodeProto &,
                     GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"ReverseSequence takes input and sequence_lens"};
  const std::string x = node.inputs[0], lens = node.inputs[1];
  Shape shape = converter.requireShape(x, "ReverseSequence");
  const int64_t rank = shape.size();
  const int64_t batchAxis = intAttr(node, "batch_axis", 1);
  const int64_t timeAxis = intAttr(node, "time_axis", 0);
  if (rank < 2 ||
      !((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0)))
    throw Unsupported{"ReverseSequence needs rank >= 2 and batch_axis, "
                      "time_axis of 0 and 1 (in either order)"};
  if (converter.requireShape(lens, "ReverseSequence") !=
      Shape{shape[batchAxis]})
    throw Unsupported{"ReverseSequence's sequence_lens must hold one length "
                      "per batch entry (" +
                      std::to_string(shape[batchAxis]) + ")"};
  std::string length = lens;
  if (converter.requireDType(lens, "ReverseSequence") != DType::I64)
    length = converter.addStep(node, "cast", {lens}, "lens_i64",
                               {{"dtype", std::string("i64")}});
  // A length past the time dim reverses all of it; a negative one counts
  // from the end (the reference's NumPy slices: [0, len) and [len - 1, 0]).
  auto i64 = [&](const std::string &suffix, int64_t value) {
    return converter.addStepConstant(node, suffix,
                                     scalarTensor(DType::I64, value));
  };
  const int64_t steps = shape[timeAxis];
  std::string fromEnd = converter.addStep(
      node, "max",
      {converter.addStep(node, "add", {length, i64("steps", steps)},
                         "lens_from_end"),
       i64("lens_floor", 0)},
      "lens_from_end_clamped");
  length = converter.addStep(
      node, "select",
      {converter.addStep(node, "lt", {length, i64("zero_lens", 0)},
                         "lens_negative"),
       fromEnd,
       converter.addStep(node, "min", {length, i64("steps_cap", steps)},
                         "lens_capped")},
      "lens_effective");
  Shape alongBatch(rank, 1);
  alongBatch[batchAxis] = shape[batchAxis];
  length = viewStep(converter, node, length, alongBatch, "lens_along_batch");
  std::string time = converter.addStepConstant(
      node, "time", indicesAlong(rank, timeAxis, shape[timeAxis]));
  std::string last = converter.addStep(
      node, "sub",
      {length,
       converter.addStepConstant(node, "one", scalarTensor(DType::I64, 1))},
      "last");
  std::string reversed =
      converter.addStep(node, "sub", {last, time}, "reversed");
  std::string inSequence =
      converter.addStep(node, "lt", {time, length}, "in_sequence");
  std::string index = converter.addStep(
      node, "select", {inSequence, reversed, time}, "index_2d");
  index = converter.addStep(
      node, "broadcast_to", {index}, "index",
      {{"shape", std::vector<int64_t>(shape.begin(), shape.end())}});
  FlatGather operands = flatGatherOperands(converter, node, x, index,
                                           DType::I64, shape, shape, timeAxis);
  node.op = "gather";
  node.inputs = {operands.flatData, operands.linearIndices};
  node.attrs = {{"axis", int64_t(0)}};
}

/// NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss (the same on
/// log_softmax over dim 1, optionally also an output), as ONNX's reference
/// computes them: loss = -input[n, target, d...] * weight[target] (0 where
/// the target is ignore_index), then none, sum, or mean = sum(loss) /
/// sum(weights) (a weight of 1 each without `weight`).
void likelihoodLoss(OnnxConverter &converter, const onnx::NodeProto &proto,
                    GraphNode &node) {
  const bool softmax = proto.op_type() == "SoftmaxCrossEntropyLoss";
  if (node.inputs.size() < 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{proto.op_type() + " takes an input and a target"};
  std::string input = node.inputs[0];
  const std::string target = node.inputs[1];
  const std::string weight = node.inputs.size() > 2 ? node.inputs[2] : "";
  Shape shape = converter.requireShape(input, proto.op_type());
  Shape targetShape = converter.requireShape(target, proto.op_type());
  DType dtype = converter.requireDType(input, proto.op_type());
  int64_t rank = shape.size();
  if (rank < 2 || static_cast<int64_t>(targetShape.size()) != rank - 1)
    throw Unsupported{"the input must be [N, C, d1, ...] and the target "
                      "[N, d1, ...]"};
  std::string reduction = "mean";
  if (auto it = node.attrs.find("reduction"); it != node.attrs.end())
    reduction = std::get<std::string>(it->second);
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    throw Unsupported{"reduction must be mean, sum or none, not " + reduction};
  std::optional<int64_t> ignoreIndex;
  if (auto it = node.attrs.find("ignore_index"); it != node.attrs.end())
    ignoreIndex = std::get<int64_t>(it->second);
  std::vector<std::string> outputs = node.outputs;
  node.outputs.resize(1);
  if (softmax) {
    std::string logProb = converter.addStep(node, "log_softmax", {input},
                                            "log_prob", {{"axis", int64_t(1)}});
    if (outputs.size() > 1 && !outputs[1].empty())
      converter.addOutputStep(
          node, "reshape", {logProb}, outputs[1],
          {{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
           {"allowzero", int64_t(1)}});
    input = logProb;
  } else if (outputs.size() > 1) {
    throw Unsupported{"NegativeLogLikelihoodLoss has one output"};
  }
  DType targetType = converter.requireDType(target, "the target");
  auto constant = [&](const std::string &suffix, DType type, double value) {
    return converter.addStepConstant(node, suffix, scalarTensor(type, value));
  };
  std::string ignored, safeTarget = target;
  if (ignoreIndex) {
    ignored =
        converter.addStep(node, "eq",
                          {target, constant("ignore_index", targetType,
                                            static_cast<double>(*ignoreIndex))},
                          "ignored");
    safeTarget = converter.addStep(
        node, "select", {ignored, constant("first", targetType, 0), target},
        "safe_target");
  }
  Shape column = targetShape;
  column.insert(column.begin() + 1, 1);
  FlatGather operands = flatGatherOperands(
      converter, node, input,
      viewStep(converter, node, safeTarget, column, "target_column"),
      targetType, shape, column, 1);
  std::string picked =
      viewStep(converter, node,
               converter.addStep(node, "gather",
                                 {operands.flatData, operands.linearIndices},
                                 "picked", {{"axis", int64_t(0)}}),
               targetShape, "picked_view");
  std::string loss = converter.addStep(node, "neg", {picked}, "negated");
  std::string zero = constant("no_loss", dtype, 0);
  if (ignoreIndex)
    loss = converter.addStep(node, "select", {ignored, zero, loss}, "kept");
  std::string weights;
  if (!weight.empty()) {
    // Clipped into range, as the reference's np.take(mode="clip").
    std::string clipped = converter.addStep(
        node, "clip",
        {safeTarget, constant("low", targetType, 0),
         constant("high", targetType, static_cast<double>(shape[1] - 1))},
        "weight_index");
    weights = converter.addStep(node, "gather", {weight, clipped}, "weights",
                                {{"axis", int64_t(0)}});
    if (ignoreIndex)
      weights = converter.addStep(node, "select", {ignored, zero, weights},
                                  "kept_weights");
    loss = converter.addStep(node, "mul", {weights, loss}, "weighted");
  } else if (ignoreIndex) {
    weights = converter.addStep(
        node, "select", {ignored, zero, constant("one", dtype, 1)}, "counted");
  }
  std::vector<int64_t> every(rank - 1);
  for (int64_t d = 0; d < rank - 1; ++d)
    every[d] = d;
  std::map<std::string, AttrValue> all = {{"axes", every},
                                          {"keepdims", int64_t(0)}};
  if (reduction == "none") {
    becomeView(node, loss, targetShape);
  } else if (reduction == "sum" || weights.empty()) {
    node.op = reduction == "sum" ? "reduce_sum" : "reduce_mean";
    node.inputs = {loss};
    node.attrs = all;
  } else {
    node.op = "div";
    node.inputs = {
        converter.addStep(node, "reduce_sum", {loss}, "total", all),
        converter.addStep(node, "reduce_sum", {weights}, "total_weight", all)};
    node.attrs.clear();
  }
}

/// Reshape: ONNX's inference does not take a shape computed by Shape and
/// data propagation; the result's shape is worked out here (0 copies the
/// input's dim unless allowzero, one -1 takes the rest) for the converters
/// after it that need it. A shape that does not fit is left to the import,
/// which reports it.
void recordReshapeResult(OnnxConverter &converter, const onnx::NodeProto &,
                         GraphNode &node) {
  auto target = node.attrs.find("shape");
  std::optional<Shape> input = converter.shapeOf(node.inputs.at(0));
  std::optional<DType> dtype = converter.dtypeOf(node.inputs.at(0));
  if (target == node.attrs.end() || !input || !dtype ||
      converter.shapeOf(node.outputs.at(0)))
    return;
  const auto *dims = std::get_if<std::vector<int64_t>>(&target->second);
  if (!dims)
    return;
  auto allowZero = node.attrs.find("allowzero");
  bool zeroIsDim = allowZero != node.attrs.end() &&
                   std::get<int64_t>(allowZero->second) != 0;
  Shape result;
  int64_t known = 1, inferred = -1;
  for (size_t d = 0; d < dims->size(); ++d) {
    int64_t dim = (*dims)[d];
    if (dim == 0 && !zeroIsDim) {
      if (d >= input->size())
        return;
      dim = (*input)[d];
    }
    if (dim == -1) {
      if (inferred >= 0)
        return;
      inferred = d;
    } else if (dim < 0 || __builtin_mul_overflow(known, dim, &known)) {
      return; // the import reports what is wrong
    }
    result.push_back(dim);
  }
  int64_t total = numElements(*input);
  if (inferred >= 0) {
    if (known == 0 || total % known)
      return;
    result[inferred] = total / known;
  } else if (known != total) {
    return;
  }
  converter.recordValue(node.outputs.at(0), result, *dtype);
}

/// Pad with a constant_value known only at run time: the input padded with
/// 0, then the value selected wherever an output position lies outside
/// the input (an index test per padded dim, which fuses).
void padWithRuntimeValue(OnnxConverter &converter, GraphNode &node) {
  const std::string x = node.inputs.at(0), value = node.inputs.at(1);
  Shape shape = converter.requireShape(x, "Pad");
  Shape valueShape = converter.requireShape(value, "Pad's constant_value");
  if (numElements(valueShape) != 1 || valueShape.size() > 1)
    throw Unsupported{"Pad's constant_value must be a scalar or one element"};
  if (converter.requireDType(value, "Pad's constant_value") !=
      converter.requireDType(x, "Pad"))
    throw Unsupported{"Pad's constant_value must have the input's dtype"};
  int64_t rank = shape.size();
  std::vector<int64_t> pads = padsOf(node, rank);
  std::string padded =
      converter.addStep(node, "pad", {x}, "zero_padded",
                        {{"pads", pads}, {"constant_value", 0.0}});
  std::string inside;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t before = pads[d], after = pads[d + rank];
    if (before <= 0 && after <= 0)
      continue; // only cropped: every position of this dim is the input's
    int64_t extent = shape[d] + before + after;
    if (extent <= 0)
      continue;
    int64_t first = std::max<int64_t>(before, 0);
    int64_t last = extent - std::max<int64_t>(after, 0); // exclusive
    std::string index = converter.addStepConstant(
        node, "index_" + std::to_string(d), indicesAlong(rank, d, extent));
    std::string test = converter.addStep(
        node, "and",
        {converter.addStep(
             node, "ge",
             {index, converter.addStepConstant(
                         node, "first_" + std::to_string(d),
                         scalarTensor(DType::I64, static_cast<double>(first)))},
             "from_" + std::to_string(d)),
         converter.addStep(
             node, "lt",
             {index, converter.addStepConstant(
                         node, "last_" + std::to_string(d),
                         scalarTensor(DType::I64, static_cast<double>(last)))},
             "to_" + std::to_string(d))},
        "inside_" + std::to_string(d));
    inside = inside.empty()
                 ? test
                 : converter.addStep(node, "and", {inside, test},
                                     "inside_to_" + std::to_string(d));
  }
  if (inside.empty()) { // nothing padded: the input, cropped
    node.inputs = {x};
    node.attrs = {{"pads", pads}, {"constant_value", 0.0}};
    return;
  }
  std::string scalar = valueShape.empty()
                           ? value
                           : viewStep(converter, node, value, {}, "value");
  node.op = "select";
  node.inputs = {inside, padded, scalar};
  node.attrs.clear();
}

/// Clip of opsets 6-10: min and max are float attributes (defaults: the
/// float range), as inputs of x's dtype.
void clipBounds(OnnxConverter &converter, const onnx::NodeProto &,
                GraphNode &node) {
  if (converter.opset >= 11)
    return;
  const DType dtype = converter.requireDType(node.inputs.at(0), "Clip");
  if (!isFloat(dtype))
    throw Unsupported{std::string("Clip of opsets 6-10 takes floats, not ") +
                      dtypeName(dtype)};
  const double limit = std::numeric_limits<float>::max();
  double low = floatAttr(node, "min", -std::numeric_limits<float>::max());
  double high = floatAttr(node, "max", std::numeric_limits<float>::max());
  node.attrs.clear();
  node.inputs.resize(1);
  node.inputs.push_back(converter.addStepConstant(
      node, "min", scalarTensor(dtype, std::max(low, -limit))));
  node.inputs.push_back(converter.addStepConstant(
      node, "max", scalarTensor(dtype, std::min(high, limit))));
}

/// Pad's axes input (opset 18): the pads given for those axes only
/// become pads for every axis.
void padsForEveryAxis(OnnxConverter &converter, GraphNode &node) {
  auto axesAttr = node.attrs.find("axes");
  if (axesAttr == node.attrs.end())
    return;
  const int64_t rank = converter.requireShape(node.inputs.at(0), "Pad").size();
  std::vector<int64_t> axes = std::get<std::vector<int64_t>>(axesAttr->second);
  node.attrs.erase(axesAttr);
  std::vector<int64_t> given = padsOf(node, axes.size());
  std::vector<int64_t> pads(2 * rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = resolvedAxis(axes[i], rank);
    if (seen[axis])
      throw Unsupported{"Pad's axes name axis " + std::to_string(axis) +
                        " twice"};
    seen[axis] = true;
    pads[axis] = given[i];
    pads[rank + axis] = given[axes.size() + i];
  }
  node.attrs["pads"] = pads;
}

void padValue(OnnxConverter &converter, const onnx::NodeProto &,
              GraphNode &node) {
  // Before opset 11 the value is the float attribute `value`.
  if (auto value = node.attrs.find("value"); value != node.attrs.end()) {
    node.attrs["constant_value"] = value->second;
    node.attrs.erase(value);
  }
  padsForEveryAxis(converter, node);
  auto mode = node.attrs.find("mode");
  if (mode != node.attrs.end() &&
      std::get<std::string>(mode->second) != "constant") {
    std::string name = std::get<std::string>(mode->second);
    bool wrap = name == "wrap" && converter.opset >= 19;
    if (name != "edge" && name != "reflect" && !wrap)
      throw Unsupported{"Pad mode '" + name +
                        "' is not supported (constant, edge, reflect; wrap "
                        "from opset 19)"};
    padByGather(converter, node, name);
    return;
  }
  if (node.inputs.size() > 1) {
    padWithRuntimeValue(converter, node);
    return;
  }
  // constant_value came in as a one-element integer list: make it a scalar.
  auto it = node.attrs.find("constant_value");
  if (it != node.attrs.end())
    if (auto *list = std::get_if<std::vector<int64_t>>(&it->second))
      it->second = list->empty() ? 0.0 : static_cast<double>((*list)[0]);
}

/// Blocked quantization's scale or zero point (x's shape but ceil(D / B)
/// along `axis`), each block's value replicated over its B positions and
/// cut to D: x's shape, read through a broadcast (never materialized).
std::string replicatedBlocks(OnnxConverter &converter, const GraphNode &node,
                             const std::string &value, const Shape &xShape,
                             int64_t axis, int64_t blockSize,
                             const std::string &suffix, const char *op) {
  const Shape shape = converter.requireShape(value, op);
  const int64_t rank = xShape.size();
  if (axis < -rank || axis >= rank)
    throw Unsupported{std::string(op) + "'s axis " + std::to_string(axis) +
                      " is out of range for rank " + std::to_string(rank)};
  if (axis < 0)
    axis += rank;
  bool fits = static_cast<int64_t>(shape.size()) == rank;
  for (int64_t d = 0; fits && d < rank; ++d)
    fits = d == axis || shape[d] == xShape[d];
  const int64_t dim = xShape[axis], blocks = fits ? shape[axis] : 0;
  // ceil(D / B) blocks: B within [ceil(D / S), ceil(D / (S - 1)) - 1].
  if (!fits || blockSize < 1 || blocks < 1 ||
      (blocks > 1 && (blockSize >= dim || (blocks - 1) * blockSize >= dim ||
                      blocks * blockSize < dim)) ||
      (blocks == 1 && blockSize < dim))
    throw Unsupported{
        std::string(op) + "'s " + suffix + " [" + formatShape(shape) +
        "] is not blocks of " + std::to_string(blockSize) + " along axis " +
        std::to_string(axis) + " of x [" + formatShape(xShape) + "]"};
  if (blocks == 1)
    return converter.addStep(node, "broadcast_to", {value},
                             suffix + "_replicated", {{"shape", xShape}});
  Shape split = shape;
  split.insert(split.begin() + axis + 1, 1);
  Shape wide = split;
  wide[axis + 1] = blockSize;
  Shape flat = shape;
  flat[axis] = blocks * blockSize;
  std::string replicated =
      viewStep(converter, node,
               converter.addStep(node, "broadcast_to",
                                 {viewStep(converter, node, value, split,
                                           suffix + "_blocks")},
                                 suffix + "_replicated", {{"shape", wide}}),
               flat, suffix + "_flat");
  if (flat[axis] == dim)
    return replicated;
  return converter.addStep(node, "slice", {replicated}, suffix + "_cut",
                           {{"starts", std::vector<int64_t>{0}},
                            {"ends", std::vector<int64_t>{dim}},
                            {"axes", std::vector<int64_t>{axis}}});
}

/// QuantizeLinear to integers: round(x / scale) half to even, plus the zero
/// point, saturated to the output dtype, as ONNX's reference computes it; a
/// per-axis scale and zero point broadcast along `axis`. int32 inputs
/// divide in f64, as the reference's NumPy promotes them. To float8 and
/// float4: x / scale plus the zero point, converted (rounded to nearest
/// even; float8 saturating unless saturate=0).
void quantizeLinear(OnnxConverter &converter, const onnx::NodeProto &,
                    GraphNode &node) {
  if (node.inputs.size() < 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"QuantizeLinear takes x, y_scale and y_zero_point"};
  const std::string x = node.inputs[0], scale = node.inputs[1];
  const std::string zeroPoint = node.inputs.size() > 2 ? node.inputs[2] : "";
  Shape shape = converter.requireShape(x, "QuantizeLinear");
  DType inputType = converter.requireDType(x, "QuantizeLinear");
  DType scaleType = converter.requireDType(scale, "QuantizeLinear");
  // The output type: the zero point's, else output_dtype's (opset 21), else
  // u8.
  DType outputType = DType::U8;
  if (!zeroPoint.empty()) {
    outputType = converter.requireDType(zeroPoint, "y_zero_point");
  } else if (int64_t given = intAttr(node, "output_dtype", 0); given != 0) {
    std::optional<DType> type = dtypeOfOnnx(static_cast<int32_t>(given));
    if (!type)
      throw Unsupported{"QuantizeLinear to " +
                        onnxTypeName(static_cast<int32_t>(given)) +
                        " is not supported"};
    outputType = *type;
  }
  const bool toFloat = isFloat(outputType);
  if (outputType != DType::U8 && outputType != DType::I8 &&
      outputType != DType::U16 && outputType != DType::I16 &&
      (!isNarrow(outputType) || outputType == DType::F8E8M0))
    throw Unsupported{std::string("QuantizeLinear to ") +
                      dtypeName(outputType) +
                      " is not supported (u8, i8, u16, i16, float8, float4, "
                      "4-bit and 2-bit integers)"};
  const int64_t blockSize = intAttr(node, "block_size", 0);
  if (inputType != DType::I32 && !isFloat(inputType))
    throw Unsupported{std::string("QuantizeLinear of ") + dtypeName(inputType) +
                      " is not supported (floats, i32)"};
  int64_t rank = shape.size();
  int64_t axis = 1;
  if (auto it = node.attrs.find("axis"); it != node.attrs.end())
    axis = std::get<int64_t>(it->second);
  // x / scale in NumPy's type for the pair (an i32 x in f64), or in
  // `precision` (opset 23) where given.
  DType compute = inputType == DType::I32 ? DType::F64 : inputType;
  if (isFloat(scaleType) && isFloat(compute) &&
      dtypeBytes(scaleType) > dtypeBytes(compute))
    compute = scaleType;
  if (int64_t precision = intAttr(node, "precision", 0); precision != 0) {
    std::optional<DType> type = dtypeOfOnnx(static_cast<int32_t>(precision));
    if (!type || !isFloat(*type))
      throw Unsupported{"QuantizeLinear's precision must be a float type"};
    compute = *type;
  }
  std::string computeName = dtypeName(compute);
  // A vector of more than one element runs along `axis`; a scalar or one
  // element is the same for every element.
  auto alongAxis = [&](const std::string &value, const std::string &suffix) {
    Shape valueShape = converter.requireShape(value, "QuantizeLinear");
    std::string result = value;
    if (converter.requireDType(value, "QuantizeLinear") != compute)
      result = converter.addStep(node, "cast", {value}, suffix + "_wide",
                                 {{"dtype", computeName}});
    if (blockSize != 0)
      return replicatedBlocks(converter, node, result, shape, axis, blockSize,
                              suffix, "QuantizeLinear");
    if (numElements(valueShape) == 1)
      return valueShape.empty()
                 ? result
                 : viewStep(converter, node, result, {}, suffix + "_scalar");
    if (valueShape.size() != 1 || axis < -rank || axis >= rank)
      throw Unsupported{"QuantizeLinear's " + suffix +
                        " must be a scalar or a vector along axis " +
                        std::to_string(axis)};
    int64_t along = axis < 0 ? axis + rank : axis;
    if (valueShape[0] != shape[along])
      throw Unsupported{"QuantizeLinear's " + suffix + " has " +
                        std::to_string(valueShape[0]) + " elements for " +
                        std::to_string(shape[along]) + " along axis " +
                        std::to_string(axis)};
    Shape view(rank - along, 1);
    view[0] = valueShape[0];
    return viewStep(converter, node, result, view, suffix + "_along");
  };
  std::string value = x;
  if (inputType != compute)
    value =
        converter.addStep(node, "cast", {x}, "wide", {{"dtype", computeName}});
  std::string scaled = converter.addStep(
      node, "div", {value, alongAxis(scale, "scale")}, "scaled");
  if (toFloat) {
    // ONNX's reference leaves float8's zero point out (it must be 0, and
    // adding +0 would turn -0 into +0); float4's is added.
    std::string shifted = scaled;
    bool zeroPointIsZero = false;
    if (const Tensor *given =
            zeroPoint.empty() ? nullptr : converter.constantOrNull(zeroPoint)) {
      zeroPointIsZero = true;
      for (int64_t i = 0; i < given->numElements(); ++i)
        zeroPointIsZero &= given->at(i) == 0;
    }
    if (!zeroPoint.empty() &&
        !(zeroPointIsZero && dtypeInfo(outputType).bits == 8))
      shifted = converter.addStep(
          node, "add", {scaled, alongAxis(zeroPoint, "zero_point")}, "shifted");
    int64_t saturate = intAttr(node, "saturate", 1);
    node.op = "cast";
    node.inputs = {shifted};
    node.attrs = {{"dtype", std::string(dtypeName(outputType))},
                  {"saturate", saturate}};
    return;
  }
  std::string rounded = converter.addStep(node, "round", {scaled}, "rounded");
  // The zero point is added and the sum saturated exactly: in f32 (f64 for
  // i32 inputs), where f16 or bf16 would round 16-bit zero points.
  if (dtypeBytes(compute) < 4) {
    compute = DType::F32;
    computeName = dtypeName(compute);
    rounded = converter.addStep(node, "cast", {rounded}, "rounded_wide",
                                {{"dtype", computeName}});
  }
  if (!zeroPoint.empty())
    rounded = converter.addStep(
        node, "add", {rounded, alongAxis(zeroPoint, "zero_point")}, "shifted");
  std::string clipped = converter.addStep(
      node, "clip",
      {rounded,
       converter.addStepConstant(
           node, "lowest",
           scalarTensor(compute, extremeScalar(outputType, false).at(0))),
       converter.addStepConstant(
           node, "highest",
           scalarTensor(compute, extremeScalar(outputType, true).at(0)))},
      "saturated");
  node.op = "cast";
  node.inputs = {clipped};
  node.attrs = {{"dtype", std::string(dtypeName(outputType))}};
}

/// DequantizeLinear's output_dtype (opset 23): the scale's dtype, or any
/// float for an f32 scale (the f32 result then converts once, as ONNX's
/// reference computes it). Blocked scales and zero points (block_size,
/// opset 21) are replicated over their blocks: the dequantization is then
/// per element.
void dequantizeOutputType(OnnxConverter &converter, const onnx::NodeProto &,
                          GraphNode &node) {
  if (node.inputs.size() < 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"DequantizeLinear takes x and x_scale"};
  const int64_t blockSize = intAttr(node, "block_size", 0);
  node.attrs.erase("block_size");
  if (blockSize != 0) {
    const Shape xShape =
        converter.requireShape(node.inputs[0], "DequantizeLinear");
    const int64_t axis = intAttr(node, "axis", 1);
    for (size_t i = 1; i < std::min<size_t>(node.inputs.size(), 3); ++i)
      if (!node.inputs[i].empty())
        node.inputs[i] = replicatedBlocks(
            converter, node, node.inputs[i], xShape, axis, blockSize,
            i == 1 ? "scale" : "zero_point", "DequantizeLinear");
  } else if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    // A one-element zero point of a scalar scale (or the reverse) is the
    // same per-tensor quantization; ONNX's reference broadcasts them.
    Shape scaleShape =
        converter.requireShape(node.inputs[1], "DequantizeLinear");
    Shape zeroShape =
        converter.requireShape(node.inputs[2], "DequantizeLinear");
    if (scaleShape != zeroShape && numElements(scaleShape) == 1 &&
        numElements(zeroShape) == 1)
      node.inputs[2] = viewStep(converter, node, node.inputs[2], scaleShape,
                                "zero_point_like_scale");
  }
  int64_t given = intAttr(node, "output_dtype", 0);
  node.attrs.erase("output_dtype");
  if (given == 0)
    return;
  std::optional<DType> outputType = dtypeOfOnnx(static_cast<int32_t>(given));
  if (node.inputs.size() < 2)
    throw Unsupported{"DequantizeLinear takes x and x_scale"};
  DType scaleType = converter.requireDType(node.inputs[1], "DequantizeLinear");
  if (outputType == scaleType)
    return;
  if (!outputType || !isFloat(*outputType) || scaleType != DType::F32)
    throw Unsupported{"DequantizeLinear's output_dtype " +
                      onnxTypeName(static_cast<int32_t>(given)) +
                      " must be the scale's dtype (or any float for an f32 "
                      "scale)"};
  std::string dequantized = converter.addStep(node, "dequantize_linear",
                                              node.inputs, "f32", node.attrs);
  node.op = "cast";
  node.inputs = {dequantized};
  node.attrs = {{"dtype", std::string(dtypeName(*outputType))}};
}

/// DynamicQuantizeLinear: u8 quantization with the scale and zero point of
/// x's own range (widened to hold 0; a range of 0 counts as 1), as ONNX's
/// reference computes them; y_scale and y_zero_point are outputs too.
void dynamicQuantizeLinear(OnnxConverter &converter, const onnx::NodeProto &,
                           GraphNode &node) {
  const std::string x = node.inputs.at(0);
  if (converter.requireDType(x, "DynamicQuantizeLinear") != DType::F32)
    throw Unsupported{"DynamicQuantizeLinear takes f32"};
  Shape shape = converter.requireShape(x, "DynamicQuantizeLinear");
  std::vector<int64_t> every(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    every[d] = d;
  std::map<std::string, AttrValue> all = {{"axes", every},
                                          {"keepdims", int64_t(0)}};
  auto constant = [&](const std::string &suffix, double value) {
    return converter.addStepConstant(node, suffix,
                                     scalarTensor(DType::F32, value));
  };
  std::string zero = constant("zero", 0), top = constant("top", 255);
  std::string low = converter.addStep(
      node, "min",
      {converter.addStep(node, "reduce_min", {x}, "min", all), zero}, "low");
  std::string high = converter.addStep(
      node, "max",
      {converter.addStep(node, "reduce_max", {x}, "max", all), zero}, "high");
  std::string range = converter.addStep(node, "sub", {high, low}, "range");
  range =
      converter.addStep(node, "select",
                        {converter.addStep(node, "eq", {range, zero}, "flat"),
                         constant("one", 1), range},
                        "nonzero_range");
  std::string scale =
      converter.addStep(node, "div", {range, top}, "dynamic_scale");
  std::string zeroPoint = converter.addStep(
      node, "round",
      {converter.addStep(
          node, "clip",
          {converter.addStep(
               node, "sub",
               {zero, converter.addStep(node, "div", {low, scale}, "low_q")},
               "zero_point_real"),
           zero, top},
          "zero_point_clipped")},
      "dynamic_zero_point");
  std::string quantized = converter.addStep(
      node, "clip",
      {converter.addStep(
           node, "add",
           {converter.addStep(
                node, "round",
                {converter.addStep(node, "div", {x, scale}, "scaled")},
                "rounded"),
            zeroPoint},
           "shifted"),
       zero, top},
      "saturated");
  std::vector<std::string> outputs = node.outputs;
  node.outputs.resize(1);
  if (outputs.size() > 1 && !outputs[1].empty())
    converter.addOutputStep(node, "reshape", {scale}, outputs[1],
                            {{"shape", std::vector<int64_t>{}}});
  if (outputs.size() > 2 && !outputs[2].empty())
    converter.addOutputStep(node, "cast", {zeroPoint}, outputs[2],
                            {{"dtype", std::string("u8")}});
  node.op = "cast";
  node.inputs = {quantized};
  node.attrs = {{"dtype", std::string("u8")}};
}

/// OneHot: `on` where a position along the new `axis` equals its index
/// (a negative index counts back from `depth`; one out of range matches
/// nothing), `off` elsewhere, selected rather than computed, so any values
/// come through exactly. `depth` must be a constant.
void oneHotSelect(OnnxConverter &converter, const onnx::NodeProto &,
                  GraphNode &node) {
  if (node.inputs.size() != 3 ||
      std::count(node.inputs.begin(), node.inputs.end(), std::string()))
    throw Unsupported{"OneHot takes indices, depth and values"};
  const std::string indices = node.inputs[0], values = node.inputs[2];
  Shape shape = converter.requireShape(indices, "OneHot");
  DType indexType = converter.requireDType(indices, "OneHot");
  const Tensor &depthValue =
      converter.constantValue(node.inputs[1], "input 1 (depth)");
  if (depthValue.numElements() != 1)
    throw Unsupported{"OneHot's depth must be one value"};
  double depthReal = depthValue.at(0);
  if (!(depthReal >= 1) || depthReal != std::floor(depthReal) ||
      depthReal > (1 << 24))
    throw Unsupported{"OneHot's depth must be a positive integer, not " +
                      std::to_string(depthReal)};
  const int64_t depth = static_cast<int64_t>(depthReal);
  Shape valuesShape = converter.requireShape(values, "OneHot's values");
  if (numElements(valuesShape) != 2 || valuesShape.size() != 1)
    throw Unsupported{"OneHot's values must be [off_value, on_value]"};
  int64_t rank = shape.size();
  int64_t axis = -1;
  if (auto it = node.attrs.find("axis"); it != node.attrs.end())
    axis = std::get<int64_t>(it->second);
  axis = resolvedAxis(axis, rank + 1);
  Shape spread = shape;
  spread.insert(spread.begin() + axis, 1);
  std::string index = viewStep(converter, node, indices, spread, "spread");
  Tensor depthScalar = scalarTensor(indexType, static_cast<double>(depth));
  std::string wrapped = converter.addStep(
      node, "add",
      {index, converter.addStepConstant(node, "depth", depthScalar)},
      "wrapped");
  std::string negative = converter.addStep(
      node, "lt",
      {index,
       converter.addStepConstant(node, "zero", scalarTensor(indexType, 0))},
      "negative");
  index =
      converter.addStep(node, "select", {negative, wrapped, index}, "index");
  Shape positionsShape(rank + 1, 1);
  positionsShape[axis] = depth;
  Tensor positions(indexType, positionsShape);
  for (int64_t i = 0; i < depth; ++i)
    positions.set(i, static_cast<double>(i));
  std::string hot = converter.addStep(
      node, "eq",
      {converter.addStepConstant(node, "positions", std::move(positions)),
       index},
      "hot");
  auto pick = [&](int64_t which, const std::string &suffix) {
    return viewStep(
        converter, node,
        converter.addStep(node, "slice", {values}, suffix + "_slice",
                          {{"starts", std::vector<int64_t>{which}},
                           {"ends", std::vector<int64_t>{which + 1}}}),
        {}, suffix);
  };
  node.op = "select";
  node.inputs = {hot, pick(1, "on"), pick(0, "off")};
  node.attrs.clear();
}

/// LRN: x / (bias + alpha / size * sum of x^2 over the channel window)^beta,
/// the window [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] cut at
/// the ends: the squares padded with zeros along dim 1 and summed over
/// `size` shifted slices.
void localResponseNorm(OnnxConverter &converter, const onnx::NodeProto &,
                       GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, "LRN");
  DType dtype = converter.requireDType(x, "LRN");
  int64_t rank = shape.size();
  if (rank < 3)
    throw Unsupported{"LRN's input must be [N, C, d1, ...]"};
  auto attr = [&](const char *name, double fallback) {
    auto it = node.attrs.find(name);
    return it == node.attrs.end() ? fallback : std::get<double>(it->second);
  };
  auto sizeAttr = node.attrs.find("size");
  if (sizeAttr == node.attrs.end())
    throw Unsupported{"LRN needs its size"};
  int64_t size = std::get<int64_t>(sizeAttr->second);
  if (size < 1 || size > 4096)
    throw Unsupported{"LRN's size must be in [1, 4096]"};
  const double alpha = attr("alpha", 1e-4f), beta = attr("beta", 0.75f),
               bias = attr("bias", 1.0f);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  const int64_t channels = shape[1];
  std::string squares = converter.addStep(node, "mul", {x, x}, "squares");
  std::vector<int64_t> pads(2 * rank, 0);
  pads[1] = before;
  pads[rank + 1] = after;
  std::string padded =
      converter.addStep(node, "pad", {squares}, "padded_squares",
                        {{"pads", pads}, {"constant_value", 0.0}});
  std::string sum;
  for (int64_t j = 0; j < size; ++j) {
    std::string window = converter.addStep(
        node, "slice", {padded}, "window_" + std::to_string(j),
        {{"starts", std::vector<int64_t>{j}},
         {"ends", std::vector<int64_t>{j + channels}},
         {"axes", std::vector<int64_t>{1}}});
    sum = sum.empty() ? window
                      : converter.addStep(node, "add", {sum, window},
                                          "sum_" + std::to_string(j));
  }
  auto constant = [&](const std::string &suffix, double value) {
    return converter.addStepConstant(node, suffix, scalarTensor(dtype, value));
  };
  std::string scaled = converter.addStep(
      node, "mul", {constant("rate", alpha / static_cast<double>(size)), sum},
      "scaled");
  std::string base =
      converter.addStep(node, "add", {constant("bias", bias), scaled}, "base");
  std::string denominator = converter.addStep(
      node, "pow", {base, constant("beta", beta)}, "denominator");
  node.op = "div";
  node.inputs = {x, denominator};
  node.attrs.clear();
}

/// `count` integers of attribute `name`, `fallback` each when it is absent.
std::vector<int64_t> spatialInts(const GraphNode &node, const char *name,
                                 int64_t fallback, int64_t count) {
  std::vector<int64_t> values(count, fallback);
  if (auto it = node.attrs.find(name); it != node.attrs.end())
    values = std::get<std::vector<int64_t>>(it->second);
  if (static_cast<int64_t>(values.size()) != count)
    throw Unsupported{std::string(name) + " must have " +
                      std::to_string(count) + " values"};
  return values;
}

std::string autoPadOf(const GraphNode &node) {
  auto it = node.attrs.find("auto_pad");
  return it == node.attrs.end() ? "NOTSET" : std::get<std::string>(it->second);
}

/// The sliding windows of a pooling or a convolution over [N, C, d1, ...]:
/// per spatial dim the kernel, strides, dilations, the pads before and
/// after (the explicit ones or auto_pad's) and the output's size.
struct SlidingWindows {
  std::vector<int64_t> kernel, strides, dilations, padBefore, padAfter;
  Shape out;
  /// Kernel positions: the product of `kernel`.
  int64_t taps = 1;
};

/// The taps of a kernel, after checking the bounds that keep the taps,
/// windows and pads countable (far past any real model; every product of
/// them stays in int64): kernel_shape, strides and dilations in [1, 2^20],
/// each of `pads` in [0, 2^20], at most 65536 taps.
int64_t checkedTaps(const std::vector<int64_t> &kernel,
                    const std::vector<int64_t> &strides,
                    const std::vector<int64_t> &dilations,
                    const std::vector<int64_t> &pads) {
  constexpr int64_t kLargest = int64_t(1) << 20;
  for (const std::vector<int64_t> *values : {&kernel, &strides, &dilations})
    for (int64_t v : *values)
      if (v < 1 || v > kLargest)
        throw Unsupported{"kernel_shape, strides and dilations must be in "
                          "[1, 2^20]"};
  for (int64_t p : pads)
    if (p < 0 || p > kLargest)
      throw Unsupported{"pads must be in [0, 2^20]"};
  int64_t taps = 1;
  for (int64_t k : kernel) {
    taps *= k;
    if (taps > 65536)
      throw Unsupported{"the kernel has more than 65536 taps"};
  }
  return taps;
}

/// The windows of `node` over an input of `shape` with `kernel`; auto_pad
/// SAME_UPPER, SAME_LOWER and VALID place the pads as the spec says.
SlidingWindows slidingWindows(const GraphNode &node, const Shape &shape,
                              std::vector<int64_t> kernel, bool ceilMode) {
  const int64_t spatial = static_cast<int64_t>(shape.size()) - 2;
  SlidingWindows w;
  w.kernel = std::move(kernel);
  w.strides = spatialInts(node, "strides", 1, spatial);
  w.dilations = spatialInts(node, "dilations", 1, spatial);
  std::vector<int64_t> pads = spatialInts(node, "pads", 0, 2 * spatial);
  w.taps = checkedTaps(w.kernel, w.strides, w.dilations, pads);
  const std::string autoPad = autoPadOf(node);
  w.out.resize(spatial);
  w.padBefore.resize(spatial);
  w.padAfter.resize(spatial);
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t in = shape[i + 2], s = w.strides[i],
                  window = (w.kernel[i] - 1) * w.dilations[i] + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      w.out[i] = (in - 1) / s + 1;
      int64_t total = std::max<int64_t>((w.out[i] - 1) * s + window - in, 0);
      w.padBefore[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.padAfter[i] = total - w.padBefore[i];
    } else if (autoPad == "VALID") {
      w.out[i] = in >= window ? (in - window) / s + 1 : 0;
      w.padBefore[i] = w.padAfter[i] = 0;
    } else if (autoPad == "NOTSET") {
      w.padBefore[i] = pads[i];
      w.padAfter[i] = pads[i + spatial];
      int64_t span = in + w.padBefore[i] + w.padAfter[i] - window;
      if (span < 0)
        throw Unsupported{"the kernel is larger than the padded input"};
      w.out[i] = (ceilMode ? (span + s - 1) / s : span / s) + 1;
      // A last window that would start in the end padding is dropped.
      if (ceilMode && (w.out[i] - 1) * s >= in + w.padBefore[i])
        --w.out[i];
    } else {
      throw Unsupported{"auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or "
                        "VALID, not " +
                        autoPad};
    }
  }
  return w;
}

/// LpNormalization: x / (sum |x|^p)^(1/p) along `axis` (p 1 or 2), 0 where
/// the norm is 0.
void lpNormalization(OnnxConverter &converter, const onnx::NodeProto &,
                     GraphNode &node) {
  const std::string x = node.inputs.at(0);
  const DType dtype = converter.requireDType(x, "LpNormalization");
  const int64_t rank = converter.requireShape(x, "LpNormalization").size();
  if (!isFloat(dtype))
    throw Unsupported{"LpNormalization takes floats"};
  const int64_t order = intAttr(node, "p", 2);
  if (order != 1 && order != 2)
    throw Unsupported{"LpNormalization's p must be 1 or 2, not " +
                      std::to_string(order)};
  const int64_t axis = resolvedAxis(intAttr(node, "axis", -1), rank);
  std::map<std::string, AttrValue> along = {
      {"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t(1)}};
  std::string norm =
      order == 2 ? converter.addStep(node, "reduce_l2", {x}, "norm", along)
                 : converter.addStep(
                       node, "reduce_sum",
                       {converter.addStep(node, "abs", {x}, "magnitude")},
                       "norm", along);
  std::string zero =
      converter.addStepConstant(node, "zero", scalarTensor(dtype, 0.0));
  node.op = "select";
  node.inputs = {converter.addStep(node, "eq", {norm, zero}, "norm_is_zero"),
                 zero, converter.addStep(node, "div", {x, norm}, "normalized")};
  node.attrs.clear();
}

/// MaxPool and AveragePool: the input padded (with the dtype's lowest
/// value for max, 0 for average; at the end also as far as ceil_mode's last
/// window reaches), one strided slice per kernel offset, combined by max or
/// by a sum divided by each window's count (the positions inside the input,
/// or inside the explicit pads with count_include_pad).
void poolBySlices(OnnxConverter &converter, const onnx::NodeProto &proto,
                  GraphNode &node) {
  const bool isMax = proto.op_type() == "MaxPool";
  std::vector<std::string> outputs = node.outputs;
  const bool wantsIndices = outputs.size() > 1 && !outputs[1].empty();
  const bool columnMajor = intAttr(node, "storage_order", 0) != 0;
  node.attrs.erase("storage_order");
  node.outputs.resize(1);
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, proto.op_type());
  DType dtype = converter.requireDType(x, proto.op_type());
  const int64_t rank = shape.size(), spatial = rank - 2;
  if (spatial < 1)
    throw Unsupported{proto.op_type() + "'s input must be [N, C, d1, ...]"};
  if (!node.attrs.count("kernel_shape"))
    throw Unsupported{proto.op_type() + " needs its kernel_shape"};
  auto flag = [&](const char *name) {
    auto it = node.attrs.find(name);
    return it != node.attrs.end() && std::get<int64_t>(it->second) != 0;
  };
  const bool countPads = flag("count_include_pad");
  const SlidingWindows windows =
      slidingWindows(node, shape, spatialInts(node, "kernel_shape", 1, spatial),
                     flag("ceil_mode"));
  const std::vector<int64_t> &kernel = windows.kernel,
                             &strides = windows.strides,
                             &dilations = windows.dilations,
                             &padBefore = windows.padBefore,
                             &padAfter = windows.padAfter;
  const Shape &out = windows.out;
  const int64_t taps = windows.taps;
  // Padding: the declared pads, and at the end whatever the last window
  // needs beyond them.
  std::vector<int64_t> padTensor(2 * rank, 0);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t needed = (out[i] - 1) * strides[i] +
                     (kernel[i] - 1) * dilations[i] + 1 - shape[i + 2] -
                     padBefore[i];
    padTensor[i + 2] = padBefore[i];
    padTensor[rank + i + 2] = std::max(needed, padAfter[i]);
  }
  // LpPool: the windows' sums of |x|^p, to the power 1 / p (zero pads add
  // nothing).
  const bool isLp = proto.op_type() == "LpPool";
  const int64_t lpOrder = isLp ? intAttr(node, "p", 2) : 0;
  std::string pooled = x;
  if (isLp) {
    if (!isFloat(dtype))
      throw Unsupported{"LpPool takes floats"};
    if (lpOrder < 1)
      throw Unsupported{"LpPool's p must be positive"};
    pooled = lpOrder == 2 ? converter.addStep(node, "mul", {x, x}, "squared")
                          : converter.addStep(node, "abs", {x}, "magnitude");
    if (lpOrder > 2)
      pooled = converter.addStep(
          node, "pow",
          {pooled, converter.addStepConstant(
                       node, "order", scalarTensor(dtype, double(lpOrder)))},
          "powered");
  }
  // MaxPool takes floats, i8 and u8 (opset 12 on); the fill never wins.
  double fill = 0.0;
  if (isMax && isFloat(dtype))
    fill = -std::numeric_limits<double>::infinity();
  else if (isMax && dtype == DType::I8)
    fill = -128;
  else if (isMax && dtype != DType::U8)
    throw Unsupported{std::string("MaxPool of ") + dtypeName(dtype) +
                      " is not supported (floats, i8, u8)"};
  if (!isMax && !isFloat(dtype))
    throw Unsupported{"AveragePool takes floats"};
  std::string padded =
      converter.addStep(node, "pad", {pooled}, "pool_padded",
                        {{"pads", padTensor}, {"constant_value", fill}});
  std::string combined;
  std::vector<int64_t> axes(spatial);
  for (int64_t i = 0; i < spatial; ++i)
    axes[i] = i + 2;
  // MaxPool's Indices, as ONNX's reference finds them: the window's
  // positions inside the input in order (the last dim fastest), the first
  // one taken and replaced only by a greater value; each index is the
  // position in the flattened input (storage_order 1: the spatial dims
  // column-major).
  if (wantsIndices && (!isMax || isLp))
    throw Unsupported{proto.op_type() + " has one output"};
  std::string best, bestIndex;
  Shape windowShape(rank, 1);
  for (int64_t i = 0; i < spatial; ++i)
    windowShape[i + 2] = out[i];
  auto trackArgmax = [&](const std::string &tap,
                         const std::vector<int64_t> &starts, int64_t o) {
    const std::string tag = std::to_string(o);
    checkConstantElements(numElements(windowShape), "MaxPool's indices");
    Tensor position(DType::I64, windowShape);
    for (int64_t e = 0; e < position.numElements(); ++e) {
      int64_t rest = e, flat = 0, stride = 1;
      bool inside = true;
      std::vector<int64_t> at(spatial);
      for (int64_t i = spatial; i-- > 0;) {
        at[i] = (rest % out[i]) * strides[i] + starts[i] - padBefore[i];
        rest /= out[i];
        inside &= at[i] >= 0 && at[i] < shape[i + 2];
      }
      for (int64_t k = 0; k < spatial; ++k) {
        int64_t i = columnMajor ? k : spatial - 1 - k;
        flat += at[i] * stride;
        stride *= shape[i + 2];
      }
      position.set(e, inside ? static_cast<double>(flat) : -1.0);
    }
    std::string index =
        converter.addStepConstant(node, "tap_index_" + tag, position);
    if (o == 0) {
      best = tap;
      bestIndex = index;
      return;
    }
    std::string none = converter.addStepConstant(node, "no_index_" + tag,
                                                 scalarTensor(DType::I64, -1));
    std::string take = converter.addStep(
        node, "and",
        {converter.addStep(node, "ne", {index, none}, "tap_inside_" + tag),
         converter.addStep(
             node, "or",
             {converter.addStep(node, "eq", {bestIndex, none},
                                "nothing_yet_" + tag),
              converter.addStep(node, "gt", {tap, best}, "greater_" + tag)},
             "better_" + tag)},
        "take_" + tag);
    best = converter.addStep(node, "select", {take, tap, best}, "best_" + tag);
    bestIndex = converter.addStep(node, "select", {take, index, bestIndex},
                                  "best_index_" + tag);
  };
  for (int64_t o = 0; o < taps; ++o) {
    std::vector<int64_t> starts(spatial), ends(spatial);
    int64_t rest = o;
    for (int64_t i = spatial; i-- > 0;) {
      int64_t j = rest % kernel[i];
      rest /= kernel[i];
      starts[i] = j * dilations[i];
      ends[i] = starts[i] + (out[i] - 1) * strides[i] + 1;
    }
    std::string slice = converter.addStep(
        node, "slice", {padded}, "tap_" + std::to_string(o),
        {{"starts", starts},
         {"ends", ends},
         {"axes", axes},
         {"steps", std::vector<int64_t>(strides.begin(), strides.end())}});
    combined =
        combined.empty()
            ? slice
            : converter.addStep(node, isMax ? "max" : "add", {combined, slice},
                                "taps_" + std::to_string(o));
    if (wantsIndices)
      trackArgmax(slice, starts, o);
  }
  if (wantsIndices) {
    // The flat index of each (n, c) plane's first element, added last; a
    // window wholly in the padding keeps -1, as the reference leaves it.
    if (shape[0] > 0 && shape[1] > (int64_t(1) << 26) / shape[0])
      throw Unsupported{"MaxPool's indices would need more than 2^26 planes"};
    Shape planeShape(rank, 1);
    planeShape[0] = shape[0];
    planeShape[1] = shape[1];
    Tensor planes(DType::I64, planeShape);
    int64_t planeSize = 1;
    for (int64_t i = 0; i < spatial; ++i)
      planeSize *= shape[i + 2];
    for (int64_t p = 0; p < shape[0] * shape[1]; ++p)
      planes.set(p, static_cast<double>(p * planeSize));
    std::string none = converter.addStepConstant(node, "no_index",
                                                 scalarTensor(DType::I64, -1));
    converter.addOutputStep(
        node, "select",
        {converter.addStep(node, "eq", {bestIndex, none}, "window_outside"),
         none,
         converter.addStep(node, "add",
                           {bestIndex, converter.addStepConstant(
                                           node, "plane_offsets", planes)},
                           "flat_index")},
        outputs[1]);
  }
  if (isMax || isLp) {
    Shape result{shape[0], shape[1]};
    result.insert(result.end(), out.begin(), out.end());
    if (isLp && lpOrder > 1)
      combined = lpOrder == 2
                     ? converter.addStep(node, "sqrt", {combined}, "norms")
                     : converter.addStep(
                           node, "pow",
                           {combined, converter.addStepConstant(
                                          node, "root",
                                          scalarTensor(dtype, 1.0 / lpOrder))},
                           "norms");
    becomeView(node, combined, result);
    return;
  }
  // Each window's count: a product over the dims of the positions it covers
  // inside the input (or inside the explicit pads with count_include_pad).
  Shape countShape(rank, 1);
  for (int64_t i = 0; i < spatial; ++i)
    countShape[i + 2] = out[i];
  Tensor counts(dtype, countShape);
  for (int64_t e = 0; e < counts.numElements(); ++e) {
    double count = 1;
    int64_t rest = e;
    for (int64_t i = spatial; i-- > 0;) {
      int64_t position = rest % out[i];
      rest /= out[i];
      int64_t low = countPads ? 0 : padBefore[i];
      int64_t high = countPads ? shape[i + 2] + padBefore[i] + padAfter[i]
                               : padBefore[i] + shape[i + 2];
      int64_t covered = 0;
      for (int64_t j = 0; j < kernel[i]; ++j) {
        int64_t p = position * strides[i] + j * dilations[i];
        covered += p >= low && p < high;
      }
      count *= static_cast<double>(covered);
    }
    counts.set(e, count);
  }
  node.op = "div";
  node.inputs = {combined,
                 converter.addStepConstant(node, "pool_counts", counts)};
  node.attrs.clear();
}

/// Resize's source position of output position `y` along one axis, in
/// input coordinates, as ONNX's reference evaluator computes it (in f64;
/// `outputWidth` is scale x input width, not rounded; `outputDim` is the
/// output's dim).
double resizeSource(const std::string &mode, double y, double scale,
                    int64_t inputWidth, double outputWidth, int64_t outputDim,
                    const std::array<double, 2> &roi) {
  if (mode == "align_corners")
    return outputWidth == 1 ? 0.0 : y * (inputWidth - 1) / (outputWidth - 1);
  if (mode == "asymmetric")
    return y / scale;
  if (mode == "tf_half_pixel_for_nn")
    return (y + 0.5) / scale;
  if (mode == "tf_crop_and_resize")
    return (outputWidth == 1 ? (roi[1] - roi[0]) * (inputWidth - 1) / 2
                             : y * (roi[1] - roi[0]) * (inputWidth - 1) /
                                   (outputWidth - 1)) +
           roi[0] * (inputWidth - 1);
  if (mode == "pytorch_half_pixel")
    return outputWidth == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (mode == "half_pixel")
    return (y + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") {
    // Opset 19: the output's center maps to the input's where rounding the
    // output dim changed the scale.
    double adjustment = static_cast<double>(outputDim) / outputWidth;
    double center = static_cast<double>(inputWidth) / 2;
    return center * (1 - adjustment) + (y + 0.5) / scale - 0.5;
  }
  throw Unsupported{"coordinate_transformation_mode " + mode +
                    " is not supported"};
}

/// Resize's interpolation weights for a source position `ratio` of the
/// way past the input position below it (1 at an input position). With
/// `antialias` (opset 18) a downscaling linear or cubic filter is widened
/// by 1 / scale and normalized, as ONNX's reference computes it.
std::vector<double> resizeCoefficients(const std::string &mode,
                                       const std::string &nearestMode,
                                       double ratio, double cubicA,
                                       bool antialias, double scale) {
  if (antialias && mode != "nearest") {
    scale = std::min(scale, 1.0);
    const bool linear = mode == "linear";
    const int64_t start =
        static_cast<int64_t>(std::floor((linear ? -1 : -2) / scale) + 1);
    std::vector<double> coefficients;
    double sum = 0;
    for (int64_t i = start; i < 2 - start; ++i) {
      double x = std::abs((static_cast<double>(i) - ratio) * scale);
      double c;
      if (linear)
        c = std::clamp(1 - x, 0.0, 1.0);
      else if (x <= 1)
        c = (cubicA + 2) * x * x * x - (cubicA + 3) * x * x + 1;
      else if (x < 2)
        c = cubicA * x * x * x - 5 * cubicA * x * x + 8 * cubicA * x -
            4 * cubicA;
      else
        c = 0;
      coefficients.push_back(c);
      sum += c;
    }
    for (double &c : coefficients)
      c /= sum;
    return coefficients;
  }
  if (mode == "nearest") {
    if (ratio == 1.0)
      return {0, 1};
    if (nearestMode == "round_prefer_floor")
      return {double(ratio <= 0.5), double(ratio > 0.5)};
    if (nearestMode == "round_prefer_ceil")
      return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (nearestMode == "floor")
      return {1, 0};
    if (nearestMode == "ceil")
      return {0, 1};
    throw Unsupported{"nearest_mode " + nearestMode + " is not supported"};
  }
  if (mode == "linear")
    return {1 - ratio, ratio};
  const double a = cubicA, r = ratio, s = 1 - ratio;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
          ((a + 2) * r - (a + 3)) * r * r + 1,
          ((a + 2) * s - (a + 3)) * s * s + 1,
          ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
}

/// Resize (opset 11 on; antialias, axes and keep_aspect_ratio_policy from
/// 18): one axis at a time, as ONNX's reference evaluator does it. Per output
/// position a table gives the input positions it reads (clamped to the input,
/// as edge padding would) and their weights: nearest is one gather; linear and
/// cubic gather 2 or 4 positions, weight them in f64 and sum, and the
/// result is rounded back to the input's dtype (integers half to even,
/// saturated). tf_crop_and_resize's positions outside the input take
/// extrapolation_value. scales, sizes and roi must be constants.
void resizeBySeparableTables(OnnxConverter &converter,
                             const onnx::NodeProto &proto, GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, proto.op_type());
  DType dtype = converter.requireDType(x, proto.op_type());
  const int64_t rank = shape.size();
  auto text = [&](const char *name, const char *fallback) {
    auto it = node.attrs.find(name);
    return it == node.attrs.end() ? std::string(fallback)
                                  : std::get<std::string>(it->second);
  };
  auto number = [&](const char *name, double fallback) {
    auto it = node.attrs.find(name);
    if (it == node.attrs.end())
      return fallback;
    if (const int64_t *integer = std::get_if<int64_t>(&it->second))
      return static_cast<double>(*integer);
    return std::get<double>(it->second);
  };
  const std::string mode = text("mode", "nearest"),
                    coordinate =
                        text("coordinate_transformation_mode", "half_pixel"),
                    nearestMode = text("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    throw Unsupported{"mode must be nearest, linear or cubic, not " + mode};
  const double cubicA = number("cubic_coeff_a", -0.75f),
               extrapolation = number("extrapolation_value", 0.0);
  const bool excludeOutside = number("exclude_outside", 0) != 0;
  if (coordinate == "half_pixel_symmetric" && converter.opset < 19)
    throw Unsupported{"coordinate_transformation_mode half_pixel_symmetric "
                      "is defined from opset 19 on"};
  const bool antialias = number("antialias", 0) != 0;
  if (antialias && mode == "nearest")
    throw Unsupported{"antialias applies to linear and cubic modes only"};
  const std::string policy = text("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    throw Unsupported{"keep_aspect_ratio_policy must be stretch, not_larger "
                      "or not_smaller, not " +
                      policy};
  // The axes scales, sizes and roi are given for (all by default).
  std::vector<int64_t> axes;
  if (auto it = node.attrs.find("axes"); it != node.attrs.end()) {
    std::vector<bool> seen(rank, false);
    for (int64_t axis : std::get<std::vector<int64_t>>(it->second)) {
      axis = resolvedAxis(axis, rank);
      if (seen[axis])
        throw Unsupported{"Resize's axes name axis " + std::to_string(axis) +
                          " twice"};
      seen[axis] = true;
      axes.push_back(axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  const int64_t givenCount = static_cast<int64_t>(axes.size());
  auto input = [&](size_t index) -> const Tensor * {
    if (node.inputs.size() <= index || node.inputs[index].empty())
      return nullptr;
    const Tensor &value = converter.constantValue(
        node.inputs[index], "Resize's input " + std::to_string(index));
    return value.numElements() == 0 ? nullptr : &value;
  };
  const Tensor *roiTensor = input(1), *scalesTensor = input(2),
               *sizesTensor = input(3);
  if (!scalesTensor == !sizesTensor)
    throw Unsupported{"Resize takes scales or sizes, one of them"};
  const Tensor &given = scalesTensor ? *scalesTensor : *sizesTensor;
  if (given.numElements() != givenCount)
    throw Unsupported{std::string(scalesTensor ? "scales" : "sizes") +
                      " must have one value per resized axis (" +
                      std::to_string(givenCount) + ")"};
  std::vector<double> roi;
  if (coordinate == "tf_crop_and_resize") {
    if (!roiTensor || roiTensor->numElements() != 2 * givenCount)
      throw Unsupported{"tf_crop_and_resize needs a roi of " +
                        std::to_string(2 * givenCount) + " values"};
    roi.assign(rank, 0.0);
    roi.resize(2 * rank, 1.0);
    for (int64_t i = 0; i < givenCount; ++i) {
      roi[axes[i]] = roiTensor->at(i);
      roi[rank + axes[i]] = roiTensor->at(givenCount + i);
    }
  }
  std::vector<double> scales(rank, 1.0);
  Shape out = shape;
  for (int64_t i = 0; i < givenCount; ++i) {
    const int64_t d = axes[i];
    double value = given.at(i);
    if (sizesTensor) {
      if (!(value >= 0 && value <= double(int64_t(1) << 40)))
        throw Unsupported{"sizes must be in [0, 2^40]"};
      out[d] = static_cast<int64_t>(value);
      scales[d] = shape[d] ? static_cast<double>(out[d]) / shape[d] : 1.0;
    } else {
      scales[d] = value;
      if (!(value > 0) || value * shape[d] > double(int64_t(1) << 40))
        throw Unsupported{"scales must be positive and keep each dim under "
                          "2^40"};
      out[d] = static_cast<int64_t>(value * shape[d]);
    }
  }
  if (sizesTensor && policy != "stretch") {
    // One scale for every resized axis, the smallest or the largest, and
    // each dim that scale times the input's, rounded half up.
    double scale = scales[axes[0]];
    for (int64_t d : axes)
      scale = policy == "not_larger" ? std::min(scale, scales[d])
                                     : std::max(scale, scales[d]);
    for (int64_t d : axes) {
      scales[d] = scale;
      out[d] = static_cast<int64_t>(scale * shape[d] + 0.5);
    }
  }
  for (int64_t d = 0; d < rank; ++d)
    if (out[d] < 0 || out[d] > (int64_t(1) << 40) || (shape[d] == 0 && out[d]))
      throw Unsupported{"output dim " + std::to_string(d) + " (" +
                        std::to_string(out[d]) + ") is out of range"};
  const bool nearest = mode == "nearest";
  const bool integer = !isFloat(dtype);
  std::string value = x;
  if (!nearest && dtype != DType::F64)
    value = converter.addStep(node, "cast", {x}, "in_f64",
                              {{"dtype", std::string("f64")}});
  const DType computeType = nearest ? dtype : DType::F64;
  Shape current = shape;
  auto isClose = [](double a, double b) {
    return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
  };
  for (int64_t axis : axes) {
    std::array<double, 2> axisRoi = {0.0, 1.0};
    if (!roi.empty())
      axisRoi = {roi[axis], roi[axis + rank]};
    if (isClose(scales[axis], 1.0) && out[axis] == shape[axis] &&
        (roi.empty() ||
         (std::abs(axisRoi[0]) <= 0.0 && isClose(axisRoi[1], 1.0))))
      continue;
    const int64_t inWidth = shape[axis], outWidth = out[axis];
    const double scaledWidth = scales[axis] * inWidth;
    // Antialias widens the filter by the downscale; its width is the same
    // for every output position.
    const int64_t taps =
        nearest ? 1
                : static_cast<int64_t>(
                      resizeCoefficients(mode, nearestMode, 0.5, cubicA,
                                         antialias, scales[axis])
                          .size());
    if (outWidth * taps > (int64_t(1) << 26))
      throw Unsupported{"an output dim of " + std::to_string(outWidth) +
                        " is more than fusec's tables take (2^26 taps)"};
    Tensor indices(DType::I64, {outWidth, taps});
    Tensor weights(DType::F64, {outWidth, taps});
    Tensor outside(DType::I1, {outWidth});
    bool extrapolates = false;
    for (int64_t y = 0; y < outWidth; ++y) {
      double source =
          resizeSource(coordinate, static_cast<double>(y), scales[axis],
                       inWidth, scaledWidth, outWidth, axisRoi);
      bool beyond = coordinate == "tf_crop_and_resize" &&
                    (source < 0 || source > inWidth - 1);
      outside.set(y, beyond);
      extrapolates |= beyond;
      double below = std::floor(source);
      double ratio = source == below ? 1.0 : source - below;
      std::vector<double> coefficients = resizeCoefficients(
          mode, nearestMode, ratio, cubicA, antialias, scales[axis]);
      const int64_t n = coefficients.size(), pad = (n + 1) / 2;
      double padded = source + pad, floorPadded = std::floor(padded);
      double fraction = padded - floorPadded;
      int64_t offset = n % 2 == 0 ? (fraction == 0 ? -(n / 2) : -(n / 2) + 1)
                       : fraction <= 0.5 ? -((n - 1) / 2)
                                         : -((n - 1) / 2) + 1;
      int64_t start = static_cast<int64_t>(floorPadded) + offset - pad;
      if (excludeOutside) {
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          if (start + k < 0 || start + k >= inWidth)
            coefficients[k] = 0;
          sum += coefficients[k];
        }
        for (double &c : coefficients)
          c /= sum == 0 ? 1.0 : sum;
      }
      auto clamped = [&](int64_t i) {
        return std::clamp<int64_t>(i, 0, inWidth - 1);
      };
      if (nearest) {
        indices.set(y, static_cast<double>(
                           clamped(start + (coefficients[0] != 0 ? 0 : 1))));
        continue;
      }
      for (int64_t k = 0; k < n; ++k) {
        indices.set(y * n + k, static_cast<double>(clamped(start + k)));
        weights.set(y * n + k, coefficients[k]);
      }
    }
    const std::string name = std::to_string(axis);
    current[axis] = outWidth;
    Shape trailing(rank - axis - 1, 1);
    if (nearest) {
      indices.shape = {outWidth};
      value = converter.addStep(
          node, "gather",
          {value,
           converter.addStepConstant(node, "resize_index_" + name, indices)},
          "resized_" + name, {{"axis", axis}});
    } else {
      std::string gathered = converter.addStep(
          node, "gather",
          {value,
           converter.addStepConstant(node, "resize_index_" + name, indices)},
          "taps_" + name, {{"axis", axis}});
      weights.shape = {outWidth, taps};
      weights.shape.insert(weights.shape.end(), trailing.begin(),
                           trailing.end());
      std::string weighted = converter.addStep(
          node, "mul",
          {gathered,
           converter.addStepConstant(node, "resize_weight_" + name, weights)},
          "weighted_" + name);
      value = converter.addStep(
          node, "reduce_sum", {weighted}, "resized_" + name,
          {{"axes", std::vector<int64_t>{axis + 1}}, {"keepdims", int64_t(0)}});
    }
    if (extrapolates) {
      outside.shape = {outWidth};
      outside.shape.insert(outside.shape.end(), trailing.begin(),
                           trailing.end());
      // The value in the computation's dtype as the reference's final
      // cast gives it: rounded half to even and saturated for integers.
      std::string fill =
          converter.addStepConstant(node, "extrapolation_" + name,
                                    scalarTensor(DType::F64, extrapolation));
      if (computeType != DType::F64) {
        if (integer)
          fill = converter.addStep(node, "round", {fill},
                                   "extrapolation_rounded_" + name);
        fill = converter.addStep(
            node, "cast", {fill}, "extrapolation_cast_" + name,
            {{"dtype", std::string(dtypeName(computeType))}});
      }
      value = converter.addStep(
          node, "select",
          {converter.addStepConstant(node, "outside_" + name, outside), fill,
           value},
          "cropped_" + name);
    }
  }
  if (value == x) { // every axis kept: the input itself
    becomeView(node, x, shape);
    return;
  }
  if (!nearest && dtype != DType::F64) {
    if (integer)
      value = converter.addStep(node, "round", {value}, "rounded");
    node.op = "cast";
    node.inputs = {value};
    node.attrs = {{"dtype", std::string(dtypeName(dtype))}};
    return;
  }
  becomeView(node, value, current);
}

/// Upsample (opsets 7-9, deprecated from 10): Resize by its scales (an
/// attribute in opset 7, input 1 from 9) with asymmetric coordinates, the
/// nearest input position rounded down, as ONNX's spec and onnxruntime
/// compute it.
void upsampleAsResize(OnnxConverter &converter, const onnx::NodeProto &proto,
                      GraphNode &node) {
  std::string scales;
  const onnx::AttributeProto *scalesAttr = nullptr;
  for (const onnx::AttributeProto &attr : proto.attribute())
    if (attr.name() == "scales")
      scalesAttr = &attr;
  if (scalesAttr) {
    Tensor tensor(DType::F32, {scalesAttr->floats_size()});
    for (int i = 0; i < scalesAttr->floats_size(); ++i)
      tensor.set(i, scalesAttr->floats(i));
    scales = converter.addStepConstant(node, "scales", std::move(tensor));
  } else if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    scales = node.inputs[1];
  } else {
    throw Unsupported{"Upsample needs its scales"};
  }
  std::string mode = "nearest";
  if (auto it = node.attrs.find("mode"); it != node.attrs.end())
    mode = std::get<std::string>(it->second);
  if (mode == "bilinear")
    mode = "linear";
  if (mode != "nearest" && mode != "linear")
    throw Unsupported{"Upsample's mode must be nearest or linear, not " + mode};
  node.inputs = {node.inputs.at(0), "", scales};
  node.attrs = {{"mode", mode},
                {"coordinate_transformation_mode", std::string("asymmetric")},
                {"nearest_mode", std::string("floor")}};
  resizeBySeparableTables(converter, proto, node);
}

/// ThresholdedRelu: x where x > alpha (default 1), else 0.
void thresholdedRelu(OnnxConverter &converter, const onnx::NodeProto &proto,
                     GraphNode &node) {
  const std::string x = node.inputs.at(0);
  DType dtype = converter.requireDType(x, proto.op_type());
  double alpha = 1.0;
  if (auto it = node.attrs.find("alpha"); it != node.attrs.end())
    alpha = std::get<double>(it->second);
  std::string above = converter.addStep(
      node, "gt",
      {x, converter.addStepConstant(node, "alpha", scalarTensor(dtype, alpha))},
      "above");
  node.op = "select";
  node.inputs = {
      above, x,
      converter.addStepConstant(node, "zero", scalarTensor(dtype, 0.0))};
  node.attrs.clear();
}

/// EyeLike: a constant of the input's 2-D shape (only its shape is read)
/// with ones on diagonal k, in `dtype` (default the input's).
void eyeLike(OnnxConverter &converter, const onnx::NodeProto &proto,
             GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, proto.op_type());
  if (shape.size() != 2)
    throw Unsupported{"EyeLike's input must be 2-D, not [" +
                      formatShape(shape) + "]"};
  DType dtype = converter.requireDType(x, proto.op_type());
  if (auto it = node.attrs.find("dtype"); it != node.attrs.end()) {
    int64_t onnxType = std::get<int64_t>(it->second);
    std::optional<DType> chosen = dtypeOfOnnx(static_cast<int32_t>(onnxType));
    if (!chosen)
      throw Unsupported{"EyeLike's dtype " + std::to_string(onnxType) +
                        " is not a dtype fusec has"};
    dtype = *chosen;
  }
  int64_t k = 0;
  if (auto it = node.attrs.find("k"); it != node.attrs.end())
    k = std::get<int64_t>(it->second);
  checkConstantElements(numElements(shape), "EyeLike's output");
  Tensor eye(dtype, shape);
  for (int64_t row = 0; row < shape[0]; ++row)
    if (row + k >= 0 && row + k < shape[1])
      eye.set(row * shape[1] + row + k, 1.0);
  becomeView(node, converter.addStepConstant(node, "eye", eye), shape);
}

/// GatherND: each index tuple (the last dim of indices, m values) names a
/// slice data[b..., i0, ..., i(m-1), :...] within its batch (the first
/// batch_dims dims, shared by data and indices): a gather from data viewed
/// as [batches x prod(the m indexed dims), rest...] at each tuple's linear
/// position. A negative index counts from the end; a tuple out of range
/// selects 0, as Gather's do.
void gatherNDFlat(OnnxConverter &converter, const onnx::NodeProto &proto,
                  GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{"GatherND takes data and indices"};
  const std::string data = node.inputs[0], indices = node.inputs[1];
  Shape shape = converter.requireShape(data, proto.op_type());
  Shape indexShape = converter.requireShape(indices, proto.op_type());
  int64_t batchDims = 0;
  if (auto it = node.attrs.find("batch_dims"); it != node.attrs.end())
    batchDims = std::get<int64_t>(it->second);
  const int64_t rank = shape.size(), indexRank = indexShape.size();
  if (indexRank < 1 || batchDims < 0 || batchDims >= std::min(rank, indexRank))
    throw Unsupported{"batch_dims must be in [0, min(data rank, indices "
                      "rank)) and indices must have rank >= 1"};
  const int64_t m = indexShape.back();
  if (m < 1 || m > rank - batchDims)
    throw Unsupported{"the indices' last dim (" + std::to_string(m) +
                      ") must be in [1, data rank - batch_dims]"};
  int64_t batches = 1, positions = 1;
  for (int64_t d = 0; d < batchDims; ++d) {
    if (shape[d] != indexShape[d])
      throw Unsupported{"batch dim " + std::to_string(d) +
                        " differs between data and indices"};
    batches *= shape[d];
  }
  std::vector<int64_t> strides(m, 1);
  for (int64_t j = m; j-- > 0;) {
    positions *= shape[batchDims + j];
    if (j > 0)
      strides[j - 1] = strides[j] * shape[batchDims + j];
  }
  auto constant = [&](const std::string &suffix, Tensor value) {
    return converter.addStepConstant(node, suffix, std::move(value));
  };
  auto along = [&](const std::vector<int64_t> &values) {
    Tensor tensor(DType::I64, {m});
    for (int64_t j = 0; j < m; ++j)
      tensor.set(j, static_cast<double>(values[j]));
    return tensor;
  };
  std::vector<int64_t> dims(shape.begin() + batchDims,
                            shape.begin() + batchDims + m);
  std::string index = indices;
  if (converter.requireDType(indices, proto.op_type()) != DType::I64)
    index = converter.addStep(node, "cast", {indices}, "index",
                              {{"dtype", std::string("i64")}});
  std::string zero = constant("zero", scalarTensor(DType::I64, 0));
  std::string wrapped = converter.addStep(
      node, "select",
      {converter.addStep(node, "lt", {index, zero}, "negative"),
       converter.addStep(node, "add", {index, constant("dims", along(dims))},
                         "from_end"),
       index},
      "wrapped");
  std::string outside = converter.addStep(
      node, "or",
      {converter.addStep(node, "lt", {wrapped, zero}, "below"),
       converter.addStep(node, "ge", {wrapped, constant("ends", along(dims))},
                         "beyond")},
      "outside");
  std::map<std::string, AttrValue> lastAxis = {
      {"axes", std::vector<int64_t>{indexRank - 1}}, {"keepdims", int64_t(0)}};
  std::string anyOutside = converter.addStep(
      node, "reduce_max",
      {converter.addStep(node, "cast", {outside}, "outside_count",
                         {{"dtype", std::string("i64")}})},
      "any_outside", lastAxis);
  std::string linear = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(node, "mul",
                         {wrapped, constant("strides", along(strides))},
                         "terms")},
      "linear", lastAxis);
  if (batches > 1) { // each batch's offset: its flat number x positions
    Shape offsetShape(indexShape.begin(), indexShape.end() - 1);
    for (int64_t d = batchDims; d < indexRank - 1; ++d)
      offsetShape[d] = 1;
    checkConstantElements(batches, "GatherND's batch offsets");
    Tensor offsets(DType::I64, offsetShape);
    for (int64_t b = 0; b < batches; ++b)
      offsets.set(b, static_cast<double>(b * positions));
    linear = converter.addStep(node, "add",
                               {linear, constant("batch_offsets", offsets)},
                               "batch_linear");
  }
  std::string safe = converter.addStep(
      node, "select",
      {converter.addStep(node, "gt", {anyOutside, zero}, "invalid"),
       constant("past_end", scalarTensor(DType::I64, batches * positions)),
       linear},
      "safe");
  Shape flat = {batches * positions};
  flat.insert(flat.end(), shape.begin() + batchDims + m, shape.end());
  node.op = "gather";
  node.inputs = {viewStep(converter, node, data, flat, "flat"), safe};
  node.attrs = {{"axis", int64_t(0)}};
}

/// HannWindow, HammingWindow and BlackmanWindow: constants of `size` (a
/// constant) points in output_datatype, computed in f64 from the spec's
/// formulas (periodic: over size points, else size - 1).
void windowFunction(OnnxConverter &converter, const onnx::NodeProto &proto,
                    GraphNode &node) {
  const std::string &op = proto.op_type();
  const Tensor &sizeValue =
      converter.constantValue(node.inputs.at(0), op + "'s size");
  if (sizeValue.numElements() != 1 || isFloat(sizeValue.dtype))
    throw Unsupported{op + "'s size must be one integer"};
  if (!(sizeValue.at(0) >= 0 && sizeValue.at(0) <= (1 << 24)))
    throw Unsupported{op + "'s size must be in [0, 2^24]"};
  const int64_t size = static_cast<int64_t>(sizeValue.at(0));
  DType dtype = DType::F32;
  if (auto it = node.attrs.find("output_datatype"); it != node.attrs.end()) {
    std::optional<DType> chosen =
        dtypeOfOnnx(static_cast<int32_t>(std::get<int64_t>(it->second)));
    if (!chosen)
      throw Unsupported{op + "'s output_datatype is not a dtype fusec has"};
    dtype = *chosen;
  }
  bool periodic = true;
  if (auto it = node.attrs.find("periodic"); it != node.attrs.end())
    periodic = std::get<int64_t>(it->second) != 0;
  const double span = static_cast<double>(periodic ? size : size - 1);
  const double pi = 3.14159265358979323846;
  Tensor window(dtype, {size});
  for (int64_t n = 0; n < size; ++n) {
    double x = static_cast<double>(n);
    double value =
        op == "HannWindow" ? std::pow(std::sin(x * pi / span), 2)
        : op == "HammingWindow"
            ? 25.0 / 46.0 - std::cos(x * pi * 2 / span) * (21.0 / 46.0)
            : 0.42 - 0.5 * std::cos(x * pi * 2 / span) +
                  0.08 * std::cos(x * pi * 4 / span);
    window.set(n, value);
  }
  becomeView(node, converter.addStepConstant(node, "window", window),
             Shape{size});
}

/// Einsum: each operand's labels laid along one label order (the output's,
/// then the summed ones), its repeated labels first reduced to their
/// diagonal (a gather), its missing ones as dims of 1; the operands are
/// multiplied (broadcast) and the summed labels reduced: one fused
/// reduction kernel, never the library's matmul. "..." stands for the
/// broadcast dims, right-aligned; without "->" the output is the ellipsis
/// dims, then the labels used once, alphabetically.
void einsumByProducts(OnnxConverter &converter, const onnx::NodeProto &proto,
                      GraphNode &node) {
  auto equationIt = node.attrs.find("equation");
  if (equationIt == node.attrs.end())
    throw Unsupported{"Einsum needs its equation"};
  std::string equation;
  for (char c : std::get<std::string>(equationIt->second))
    if (c != ' ')
      equation += c;
  std::string lhs = equation, output;
  const size_t arrow = equation.find("->");
  const bool explicitOutput = arrow != std::string::npos;
  if (explicitOutput) {
    lhs = equation.substr(0, arrow);
    output = equation.substr(arrow + 2);
  }
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != node.inputs.size())
    throw Unsupported{"the equation has " + std::to_string(terms.size()) +
                      " operands but Einsum has " +
                      std::to_string(node.inputs.size()) + " inputs"};
  // Labels as ints: letters as themselves, ellipsis dims as 256 + k (k
  // counting from the last ellipsis dim).
  auto labelsOf = [&](const std::string &term, int64_t rank,
                      const std::string &what) {
    std::vector<int> labels;
    size_t dots = term.find("...");
    std::string letters = term;
    if (dots != std::string::npos)
      letters.erase(dots, 3);
    for (char c : letters)
      if (!std::isalpha(static_cast<unsigned char>(c)))
        throw Unsupported{"the equation's " + what + " has '" +
                          std::string(1, c) + "', not a letter"};
    int64_t ellipsis = rank - static_cast<int64_t>(letters.size());
    if (dots == std::string::npos ? ellipsis != 0 : ellipsis < 0)
      throw Unsupported{"the equation's " + what + " '" + term +
                        "' does not fit rank " + std::to_string(rank)};
    for (size_t i = 0; i < term.size();) {
      if (term.compare(i, 3, "...") == 0) {
        for (int64_t k = ellipsis; k-- > 0;)
          labels.push_back(256 + static_cast<int>(k));
        i += 3;
      } else {
        labels.push_back(static_cast<unsigned char>(term[i++]));
      }
    }
    return labels;
  };
  std::vector<std::vector<int>> operandLabels;
  std::vector<Shape> shapes;
  std::map<int, int64_t> sizes, uses;
  int64_t ellipsisDims = 0;
  for (size_t t = 0; t < terms.size(); ++t) {
    Shape shape = converter.requireShape(node.inputs[t], "Einsum");
    std::vector<int> labels =
        labelsOf(terms[t], shape.size(), "operand " + std::to_string(t));
    for (size_t d = 0; d < labels.size(); ++d) {
      int label = labels[d];
      if (label >= 256)
        ellipsisDims = std::max<int64_t>(ellipsisDims, label - 255);
      auto [it, fresh] = sizes.emplace(label, shape[d]);
      if (!fresh && it->second != shape[d]) {
        if (label >= 256 && (it->second == 1 || shape[d] == 1))
          it->second = std::max(it->second, shape[d]); // broadcast
        else
          throw Unsupported{"label dims disagree (" +
                            std::to_string(it->second) + " and " +
                            std::to_string(shape[d]) + ")"};
      }
      ++uses[label];
    }
    operandLabels.push_back(labels);
    shapes.push_back(shape);
  }
  std::vector<int> outputLabels;
  if (explicitOutput) {
    outputLabels =
        labelsOf(output,
                 ellipsisDims + static_cast<int64_t>(output.size()) -
                     (output.find("...") != std::string::npos ? 3 : 0),
                 "output");
    std::set<int> seen;
    for (int label : outputLabels)
      if (!sizes.count(label) || !seen.insert(label).second)
        throw Unsupported{"the output's labels must each appear once, in "
                          "an operand"};
  } else {
    for (int64_t k = ellipsisDims; k-- > 0;)
      outputLabels.push_back(256 + static_cast<int>(k));
    for (auto [label, count] : uses)
      if (label < 256 && count == 1)
        outputLabels.push_back(label);
  }
  std::vector<int> order = outputLabels;
  for (auto [label, size] : sizes)
    if (std::find(order.begin(), order.end(), label) == order.end())
      order.push_back(label);
  std::string product;
  for (size_t t = 0; t < terms.size(); ++t) {
    std::string value = node.inputs[t];
    std::vector<int> labels = operandLabels[t];
    Shape shape = shapes[t];
    const std::string tag = std::to_string(t);
    // A label repeated within the operand: its diagonal, by a gather of
    // the two dims side by side, flattened.
    for (size_t p = 0; p < labels.size(); ++p)
      for (size_t q = p + 1; q < labels.size(); ++q) {
        if (labels[p] != labels[q])
          continue;
        std::vector<int64_t> perm;
        for (size_t d = 0; d < labels.size(); ++d)
          if (d != q)
            perm.push_back(d);
        perm.insert(perm.begin() + p + 1, static_cast<int64_t>(q));
        Shape moved, flat;
        for (int64_t d : perm)
          moved.push_back(shape[d]);
        const int64_t n = shape[p];
        for (size_t d = 0; d < moved.size(); ++d)
          if (d == p + 1)
            flat.back() *= moved[d];
          else
            flat.push_back(moved[d]);
        checkConstantElements(n, "Einsum's diagonal");
        Tensor diagonal(DType::I64, {n});
        for (int64_t i = 0; i < n; ++i)
          diagonal.set(i, static_cast<double>(i * (n + 1)));
        std::string suffix = tag + "_" + std::to_string(p);
        value = converter.addStep(
            node, "gather",
            {viewStep(converter, node,
                      converter.addStep(node, "transpose", {value},
                                        "paired_" + suffix, {{"perm", perm}}),
                      flat, "pair_flat_" + suffix),
             converter.addStepConstant(node, "diagonal_index_" + suffix,
                                       diagonal)},
            "diagonal_" + suffix, {{"axis", static_cast<int64_t>(p)}});
        labels.erase(labels.begin() + q);
        shape.erase(shape.begin() + q);
        --q;
      }
    // Laid along `order`: a transpose into it, then dims of 1 where the
    // operand lacks a label.
    std::vector<int64_t> perm;
    Shape laid;
    for (int label : order) {
      auto at = std::find(labels.begin(), labels.end(), label);
      if (at != labels.end()) {
        perm.push_back(at - labels.begin());
        laid.push_back(shape[at - labels.begin()]);
      } else {
        laid.push_back(1);
      }
    }
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity &= perm[i] == static_cast<int64_t>(i);
    if (!identity)
      value = converter.addStep(node, "transpose", {value}, "ordered_" + tag,
                                {{"perm", perm}});
    if (laid.size() != shape.size())
      value = viewStep(converter, node, value, laid, "laid_" + tag);
    product = product.empty() ? value
                              : converter.addStep(node, "mul", {product, value},
                                                  "product_" + tag);
  }
  Shape result;
  for (int label : outputLabels)
    result.push_back(sizes[label]);
  std::vector<int64_t> summed;
  for (size_t i = outputLabels.size(); i < order.size(); ++i)
    summed.push_back(static_cast<int64_t>(i));
  if (summed.empty()) {
    // Broadcasting may still widen a dim of 1: expand to the result.
    node.op = "expand";
    node.inputs = {product};
    node.attrs = {
        {"shape", std::vector<int64_t>(result.begin(), result.end())}};
    return;
  }
  node.op = "reduce_sum";
  node.inputs = {product};
  node.attrs = {{"axes", summed}, {"keepdims", int64_t(0)}};
}

/// The identity of a scatter's `reduction` in `dtype` ("none" and "add":
/// -0.0 for floats, which leaves every float as it is, 0 for integers;
/// "mul": 1; "max" and "min": the dtype's lowest and highest values).
Tensor scatterIdentity(DType dtype, const std::string &reduction) {
  if (reduction == "mul")
    return scalarTensor(dtype, 1.0);
  if (reduction == "max" || reduction == "min")
    return extremeScalar(dtype, /*highest=*/reduction == "min");
  return scalarTensor(dtype, isFloat(dtype) ? -0.0 : 0.0);
}

/// A scatter's `reduction`: none, add, mul, or (opset 18 on) max and min.
std::string scatterReduction(const GraphNode &node, int64_t opset) {
  auto it = node.attrs.find("reduction");
  std::string reduction =
      it == node.attrs.end() ? "none" : std::get<std::string>(it->second);
  bool known = reduction == "none" || reduction == "add" || reduction == "mul";
  if (opset >= 18)
    known |= reduction == "max" || reduction == "min";
  if (!known)
    throw Unsupported{"reduction must be none, add, mul" +
                      std::string(opset >= 18 ? ", max or min"
                                              : " or (opset "
                                                "18 on) max or "
                                                "min") +
                      ", not " + reduction};
  return reduction;
}

/// The graph op that combines the updates of a scatter's `reduction`, and
/// the one that combines their result with the data.
std::pair<const char *, const char *>
scatterCombiners(const std::string &reduction) {
  if (reduction == "add")
    return {"reduce_sum", "add"};
  if (reduction == "mul")
    return {"reduce_prod", "mul"};
  if (reduction == "max")
    return {"reduce_max", "max"};
  return {"reduce_min", "min"};
}

/// `index` (any integer dtype) as i64 with negative values counted from
/// `dims` (broadcast).
std::string wrappedIndices(OnnxConverter &converter, GraphNode &node,
                           const std::string &index, DType indexType,
                           const std::string &dims) {
  std::string wide = index;
  if (indexType != DType::I64)
    wide = converter.addStep(node, "cast", {index}, "index_i64",
                             {{"dtype", std::string("i64")}});
  std::string zero = converter.addStepConstant(node, "index_zero",
                                               scalarTensor(DType::I64, 0));
  return converter.addStep(
      node, "select",
      {converter.addStep(node, "lt", {wide, zero}, "index_negative"),
       converter.addStep(node, "add", {wide, dims}, "index_from_end"), wide},
      "index_wrapped");
}

/// ScatterElements (and Scatter, its name before opset 11): each output
/// position searches the updates along `axis` at its own other coordinates
/// for those whose index names it (work: output size x the updates' extent
/// along the axis). "none" takes the last such update (duplicates are
/// undefined in ONNX), "add" and "mul" combine them all with the data.
void scatterElements(OnnxConverter &converter, const onnx::NodeProto &proto,
                     GraphNode &node) {
  if (node.inputs.size() != 3)
    throw Unsupported{proto.op_type() + " takes data, indices and updates"};
  const std::string data = node.inputs[0], indices = node.inputs[1],
                    updates = node.inputs[2];
  Shape shape = converter.requireShape(data, proto.op_type());
  Shape indexShape = converter.requireShape(indices, proto.op_type());
  DType dtype = converter.requireDType(data, proto.op_type());
  if (converter.requireShape(updates, proto.op_type()) != indexShape)
    throw Unsupported{"updates must have the indices' shape"};
  const int64_t rank = shape.size();
  if (rank == 0 || static_cast<int64_t>(indexShape.size()) != rank)
    throw Unsupported{"indices must have the data's rank (" +
                      std::to_string(rank) + ")"};
  int64_t axis = 0;
  if (auto it = node.attrs.find("axis"); it != node.attrs.end())
    axis = std::get<int64_t>(it->second);
  axis = resolvedAxis(axis, rank);
  const std::string reduction = scatterReduction(node, converter.opset);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indexShape[d] > shape[d])
      throw Unsupported{"indices dim " + std::to_string(d) +
                        " exceeds the data's"};
  const int64_t extent = indexShape[axis];
  // Indices and updates with the axis moved last and a 1 in its place,
  // padded (index -1, matching nothing) to the data's other dims.
  std::vector<int64_t> perm;
  Shape laid;
  std::vector<int64_t> pads(2 * (rank + 1), 0);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  for (int64_t d = 0; d < rank; ++d) {
    laid.push_back(d == axis ? 1 : indexShape[d]);
    if (d != axis)
      pads[rank + 1 + d] = shape[d] - indexShape[d];
  }
  laid.push_back(extent);
  auto layAlongLast = [&](const std::string &value, double fill,
                          const std::string &suffix) {
    std::string moved = converter.addStep(node, "transpose", {value},
                                          suffix + "_moved", {{"perm", perm}});
    return converter.addStep(
        node, "pad", {viewStep(converter, node, moved, laid, suffix + "_laid")},
        suffix + "_padded", {{"pads", pads}, {"constant_value", fill}});
  };
  checkConstantElements(shape[axis], "the positions along the axis");
  checkConstantElements(extent, "the updates along the axis");
  std::string position = converter.addStepConstant(
      node, "positions", indicesAlong(rank + 1, axis, shape[axis]));
  std::string index = layAlongLast(
      wrappedIndices(
          converter, node, indices,
          converter.requireDType(indices, proto.op_type()),
          converter.addStepConstant(node, "axis_dim",
                                    scalarTensor(DType::I64, shape[axis]))),
      -1.0, "index");
  std::string update = layAlongLast(updates, 0.0, "update");
  std::string match = converter.addStep(node, "eq", {index, position}, "match");
  std::string identity = converter.addStepConstant(
      node, "identity", scatterIdentity(dtype, reduction));
  std::map<std::string, AttrValue> overUpdates = {
      {"axes", std::vector<int64_t>{rank}}, {"keepdims", int64_t(0)}};
  if (reduction != "none") {
    auto [reduce, combine] = scatterCombiners(reduction);
    std::string combined = converter.addStep(
        node, reduce,
        {converter.addStep(node, "select", {match, update, identity},
                           "contributions")},
        "combined", overUpdates);
    node.op = combine;
    node.inputs = {data, combined};
    node.attrs.clear();
    return;
  }
  std::string counter = converter.addStepConstant(
      node, "update_numbers", indicesAlong(rank + 1, rank, extent));
  std::string chosen = converter.addStep(
      node, "reduce_max",
      {converter.addStep(node, "select",
                         {match, counter,
                          converter.addStepConstant(
                              node, "no_update", scalarTensor(DType::I64, -1))},
                         "candidates")},
      "chosen",
      {{"axes", std::vector<int64_t>{rank}}, {"keepdims", int64_t(1)}});
  std::string picked = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(
          node, "select",
          {converter.addStep(node, "eq", {counter, chosen}, "is_chosen"),
           update, identity},
          "chosen_only")},
      "picked", overUpdates);
  std::string updated = converter.addStep(
      node, "ge",
      {viewStep(converter, node, chosen, shape, "chosen_flat"),
       converter.addStepConstant(node, "zero", scalarTensor(DType::I64, 0))},
      "updated");
  node.op = "select";
  node.inputs = {updated, picked, data};
  node.attrs.clear();
}

/// ScatterND: each index tuple names a slice data[i0, ..., i(m-1), :...].
/// Each of the data's prod(first m dims) slices finds the last tuple naming
/// it (work: slices x tuples) and takes that update, gathered ("none";
/// duplicates are undefined in ONNX), or combines every update naming it
/// with the data ("add", "mul"; work: output size x tuples).
void scatterND(OnnxConverter &converter, const onnx::NodeProto &proto,
               GraphNode &node) {
  if (node.inputs.size() != 3)
    throw Unsupported{"ScatterND takes data, indices and updates"};
  const std::string data = node.inputs[0], indices = node.inputs[1],
                    updates = node.inputs[2];
  Shape shape = converter.requireShape(data, proto.op_type());
  Shape indexShape = converter.requireShape(indices, proto.op_type());
  DType dtype = converter.requireDType(data, proto.op_type());
  const int64_t rank = shape.size(), indexRank = indexShape.size();
  if (indexRank < 1 || indexShape.back() < 1 || indexShape.back() > rank)
    throw Unsupported{"the indices' last dim must be in [1, data rank]"};
  const int64_t m = indexShape.back();
  Shape updateShape(indexShape.begin(), indexShape.end() - 1);
  updateShape.insert(updateShape.end(), shape.begin() + m, shape.end());
  if (converter.requireShape(updates, proto.op_type()) != updateShape)
    throw Unsupported{"updates must be [" + formatShape(updateShape) + "]"};
  const std::string reduction = scatterReduction(node, converter.opset);
  int64_t slices = 1, tuples = 1;
  std::vector<int64_t> strides(m, 1);
  for (int64_t j = m; j-- > 0;) {
    slices *= shape[j];
    if (j > 0)
      strides[j - 1] = strides[j] * shape[j];
  }
  for (int64_t d = 0; d + 1 < indexRank; ++d)
    tuples *= indexShape[d];
  Shape rest(shape.begin() + m, shape.end());
  auto along = [&](const std::vector<int64_t> &values) {
    Tensor tensor(DType::I64, {m});
    for (int64_t j = 0; j < m; ++j)
      tensor.set(j, static_cast<double>(values[j]));
    return tensor;
  };
  std::string index = wrappedIndices(
      converter, node, indices, converter.requireDType(indices, "ScatterND"),
      converter.addStepConstant(
          node, "dims",
          along(std::vector<int64_t>(shape.begin(), shape.begin() + m))));
  std::string linear = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(
          node, "mul",
          {index, converter.addStepConstant(node, "strides", along(strides))},
          "terms")},
      "linear",
      {{"axes", std::vector<int64_t>{indexRank - 1}},
       {"keepdims", int64_t(0)}});
  checkConstantElements(slices, "ScatterND's slices");
  checkConstantElements(tuples, "ScatterND's index tuples");
  Tensor sliceNumbers(DType::I64, {slices, 1});
  for (int64_t q = 0; q < slices; ++q)
    sliceNumbers.set(q, static_cast<double>(q));
  std::string match = converter.addStep(
      node, "eq",
      {converter.addStepConstant(node, "slice_numbers", sliceNumbers),
       viewStep(converter, node, linear, {1, tuples}, "linear_row")},
      "match");
  Shape flatData = {slices};
  flatData.insert(flatData.end(), rest.begin(), rest.end());
  Shape flatUpdates = {tuples};
  flatUpdates.insert(flatUpdates.end(), rest.begin(), rest.end());
  std::string slicesOfData =
      viewStep(converter, node, data, flatData, "slices");
  std::string result;
  if (reduction != "none") {
    Shape matchShape = {slices, tuples}, updateRows = {1, tuples};
    matchShape.insert(matchShape.end(), rest.size(), 1);
    updateRows.insert(updateRows.end(), rest.begin(), rest.end());
    auto [reduce, combine] = scatterCombiners(reduction);
    std::string combined = converter.addStep(
        node, reduce,
        {converter.addStep(
            node, "select",
            {viewStep(converter, node, match, matchShape, "match_laid"),
             viewStep(converter, node, updates, updateRows, "update_rows"),
             converter.addStepConstant(node, "identity",
                                       scatterIdentity(dtype, reduction))},
            "contributions")},
        "combined",
        {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}});
    result =
        converter.addStep(node, combine, {slicesOfData, combined}, "scattered");
  } else {
    Tensor tupleNumbers(DType::I64, {1, tuples});
    for (int64_t u = 0; u < tuples; ++u)
      tupleNumbers.set(u, static_cast<double>(u));
    std::string chosen = converter.addStep(
        node, "reduce_max",
        {converter.addStep(
            node, "select",
            {match,
             converter.addStepConstant(node, "tuple_numbers", tupleNumbers),
             converter.addStepConstant(node, "no_tuple",
                                       scalarTensor(DType::I64, -1))},
            "candidates")},
        "chosen",
        {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}});
    std::string zero =
        converter.addStepConstant(node, "zero", scalarTensor(DType::I64, 0));
    std::string picked = converter.addStep(
        node, "gather",
        {viewStep(converter, node, updates, flatUpdates, "update_slices"),
         converter.addStep(node, "max", {chosen, zero}, "chosen_or_first")},
        "picked", {{"axis", int64_t(0)}});
    Shape column = {slices};
    column.insert(column.end(), rest.size(), 1);
    result = converter.addStep(
        node, "select",
        {viewStep(converter, node,
                  converter.addStep(node, "ge", {chosen, zero}, "updated"),
                  column, "updated_column"),
         picked, slicesOfData},
        "scattered");
  }
  becomeView(node, result, shape);
}

/// GlobalAveragePool and GlobalMaxPool: a mean or max over every spatial
/// dim, kept as 1s.
void globalPool(OnnxConverter &converter, const onnx::NodeProto &proto,
                GraphNode &node) {
  Shape shape = converter.requireShape(node.inputs.at(0), proto.op_type());
  if (shape.size() < 3)
    throw Unsupported{proto.op_type() +
                      "'s input must be [N, C, d1, ...], "
                      "not [" +
                      formatShape(shape) + "]"};
  std::vector<int64_t> spatialAxes(shape.size() - 2);
  std::iota(spatialAxes.begin(), spatialAxes.end(), int64_t(2));
  node.attrs = {{"axes", spatialAxes}, {"keepdims", int64_t(1)}};
}

/// InstanceNormalization: each (image, channel) normalized over its
/// spatial dims (a layer norm from axis 2 with a unit scale), then scaled
/// and shifted per channel.
void instanceNormalization(OnnxConverter &converter,
                           const onnx::NodeProto &proto, GraphNode &node) {
  if (node.inputs.size() != 3)
    throw Unsupported{"InstanceNormalization takes input, scale and B"};
  const std::string x = node.inputs[0], scale = node.inputs[1],
                    shift = node.inputs[2];
  Shape shape = converter.requireShape(x, proto.op_type());
  DType dtype = converter.requireDType(x, proto.op_type());
  if (shape.size() < 3)
    throw Unsupported{"InstanceNormalization's input must be [N, C, d1, "
                      "...], not [" +
                      formatShape(shape) + "]"};
  for (const std::string &perChannel : {scale, shift})
    if (converter.requireShape(perChannel, proto.op_type()) != Shape{shape[1]})
      throw Unsupported{"scale and B must be [" + std::to_string(shape[1]) +
                        "]"};
  double epsilon = 1e-5f;
  if (auto it = node.attrs.find("epsilon"); it != node.attrs.end())
    epsilon = std::get<double>(it->second);
  checkConstantElements(numElements(Shape(shape.begin() + 2, shape.end())),
                        "InstanceNormalization's unit scale");
  Tensor ones(dtype, Shape(shape.begin() + 2, shape.end()));
  for (int64_t i = 0; i < ones.numElements(); ++i)
    ones.set(i, 1.0);
  std::string normalized = converter.addStep(
      node, "layer_norm",
      {x, converter.addStepConstant(node, "unit_scale", ones)}, "normalized",
      {{"axis", int64_t(2)}, {"epsilon", epsilon}});
  Shape channelShape(shape.size(), 1);
  channelShape[1] = shape[1];
  std::string scaled =
      converter.addStep(node, "mul",
                        {normalized, viewStep(converter, node, scale,
                                              channelShape, "scale_column")},
                        "scaled");
  node.op = "add";
  node.inputs = {scaled,
                 viewStep(converter, node, shift, channelShape, "B_column")};
  node.attrs.clear();
}

/// Attention (opsets 23-25): scaled dot-product attention as ONNX's
/// reference evaluator computes it, in graph ops. 3-D inputs are split into
/// heads; the past key and value are concatenated before the new ones
/// (present_key, present_value); K and V heads are repeated for grouped
/// queries; Q and K are each scaled by sqrt(scale); the bias is the mask
/// (a boolean one as 0 / -inf, padded to the keys with -inf), the causal
/// and sliding-window frontiers (offset by the past's length, or per batch
/// by nonpad_kv_seqlen - queries) and the padding of nonpad_kv_seqlen; a
/// query row whose bias masks every key gives zeros, not NaN.
void attention(OnnxConverter &converter, const onnx::NodeProto &proto,
               GraphNode &node) {
  auto input = [&](size_t i) { return nameOrEmpty(node.inputs, i); };
  std::string q = input(0), k = input(1), v = input(2);
  const std::string mask = input(3), pastKey = input(4), pastValue = input(5),
                    nonpad = input(6);
  if (k.empty() || v.empty())
    throw Unsupported{"Attention takes Q, K and V"};
  if (pastKey.empty() != pastValue.empty())
    throw Unsupported{"past_key and past_value come together"};
  if (!nonpad.empty() && converter.opset < 24)
    throw Unsupported{"nonpad_kv_seqlen is an input from opset 24 on"};
  if (!nonpad.empty() && !pastKey.empty())
    throw Unsupported{"nonpad_kv_seqlen cannot be combined with past_key"};
  const DType dtype = converter.requireDType(q, "Attention");
  if (!isFloat(dtype))
    throw Unsupported{std::string("Attention of ") + dtypeName(dtype) +
                      " is not supported (floats)"};
  for (const std::string &other : {k, v})
    if (converter.requireDType(other, "Attention") != dtype)
      throw Unsupported{"Q, K and V must have one dtype"};
  Shape qShape = converter.requireShape(q, "Attention"),
        kShape = converter.requireShape(k, "Attention"),
        vShape = converter.requireShape(v, "Attention");
  const size_t rank = qShape.size();
  if ((rank != 3 && rank != 4) || kShape.size() != rank ||
      vShape.size() != rank)
    throw Unsupported{"Q, K and V must all be 3-D or all 4-D"};
  const bool heads3d = rank == 3;
  const bool qHeadsGiven = node.attrs.count("q_num_heads") > 0,
             kvHeadsGiven = node.attrs.count("kv_num_heads") > 0;
  if (!heads3d && converter.opset >= 25 && (qHeadsGiven || kvHeadsGiven))
    throw Unsupported{"q_num_heads and kv_num_heads are for 3-D inputs only"};
  if (heads3d && (!qHeadsGiven || !kvHeadsGiven))
    throw Unsupported{"3-D inputs need q_num_heads and kv_num_heads"};
  // 3-D [B, S, heads * size] becomes [B, heads, S, size].
  auto splitHeads = [&](std::string &value, Shape &shape, int64_t heads,
                        const std::string &suffix) {
    if (heads < 1 || shape[2] % heads != 0)
      throw Unsupported{"a hidden size of " + std::to_string(shape[2]) +
                        " does not split into " + std::to_string(heads) +
                        " heads"};
    Shape split = {shape[0], shape[1], heads, shape[2] / heads};
    value = converter.addStep(
        node, "transpose",
        {viewStep(converter, node, value, split, suffix + "_split")},
        suffix + "_heads", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    shape = {split[0], split[2], split[1], split[3]};
  };
  if (heads3d) {
    int64_t qHeads = intAttr(node, "q_num_heads", 0),
            kvHeads = intAttr(node, "kv_num_heads", 0);
    splitHeads(q, qShape, qHeads, "q");
    splitHeads(k, kShape, kvHeads, "k");
    splitHeads(v, vShape, kvHeads, "v");
  }
  const int64_t batch = qShape[0], qHeads = qShape[1], queries = qShape[2],
                headSize = qShape[3], kvHeads = kShape[1];
  if (kShape[0] != batch || vShape[0] != batch)
    throw Unsupported{"Q, K and V must have one batch size"};
  if (kShape[3] != headSize)
    throw Unsupported{"K's head size " + std::to_string(kShape[3]) +
                      " is not Q's " + std::to_string(headSize)};
  if (vShape[1] != kvHeads || vShape[2] != kShape[2])
    throw Unsupported{"V must have K's heads and sequence length"};
  if (kvHeads < 1 || qHeads % kvHeads != 0)
    throw Unsupported{std::to_string(qHeads) +
                      " query heads do not group "
                      "over " +
                      std::to_string(kvHeads) + " key heads"};
  // The keys: the past ones, then the new ones.
  int64_t pastLength = 0;
  auto withPast = [&](std::string &value, Shape &shape, const std::string &past,
                      const std::string &suffix) {
    if (past.empty())
      return;
    Shape pastShape = converter.requireShape(past, "Attention");
    if (pastShape.size() != 4 || pastShape[0] != shape[0] ||
        pastShape[1] != shape[1] || pastShape[3] != shape[3])
      throw Unsupported{"past_key and past_value must be [" +
                        std::to_string(shape[0]) + ", " +
                        std::to_string(shape[1]) + ", past, " +
                        std::to_string(shape[3]) + "]"};
    pastLength = pastShape[2];
    value = converter.addStep(node, "concat", {past, value}, suffix,
                              {{"axis", int64_t(2)}});
    shape[2] += pastShape[2];
  };
  withPast(k, kShape, pastKey, "present_key");
  withPast(v, vShape, pastValue, "present_value");
  const int64_t keys = kShape[2];
  auto outputOf = [&](size_t i) { return nameOrEmpty(node.outputs, i); };
  auto emitOutput = [&](size_t i, const std::string &value,
                        const Shape &shape) {
    if (outputOf(i).empty())
      return;
    converter.recordValue(outputOf(i), shape, dtype);
    converter.addOutputStep(
        node, "reshape", {value}, outputOf(i),
        {{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
         {"allowzero", int64_t(1)}});
  };
  emitOutput(1, k, kShape);
  emitOutput(2, v, vShape);
  // Grouped queries: each key head repeated for its group of query heads.
  auto repeatHeads = [&](const std::string &value, const Shape &shape,
                         const std::string &suffix) {
    if (qHeads == kvHeads)
      return value;
    int64_t group = qHeads / kvHeads;
    std::string grouped = converter.addStep(
        node, "expand",
        {viewStep(converter, node, value,
                  {shape[0], kvHeads, 1, shape[2], shape[3]},
                  suffix + "_grouped")},
        suffix + "_repeated",
        {{"shape",
          std::vector<int64_t>{shape[0], kvHeads, group, shape[2], shape[3]}}});
    return viewStep(converter, node, grouped,
                    {shape[0], qHeads, shape[2], shape[3]},
                    suffix + "_per_query_head");
  };
  const std::string keysRepeated = repeatHeads(k, kShape, "k");
  const std::string valuesRepeated = repeatHeads(v, vShape, "v");

  // Q and K each scaled by sqrt(scale) (1 / sqrt(head size) by default),
  // rounded to the dtype as the reference does.
  double scale = node.attrs.count("scale")
                     ? floatAttr(node, "scale", 1.0f)
                     : 1.0 / std::sqrt(static_cast<double>(headSize));
  std::string rootScale = converter.addStepConstant(
      node, "root_scale", scalarTensor(dtype, std::sqrt(scale)));
  std::string scaledQ =
      converter.addStep(node, "mul", {q, rootScale}, "q_scaled");
  std::string scaledKT = converter.addStep(
      node, "transpose",
      {converter.addStep(node, "mul", {keysRepeated, rootScale}, "k_scaled")},
      "k_transposed", {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  std::string scores =
      converter.addStep(node, "matmul", {scaledQ, scaledKT}, "scores");
  const Shape scoreShape = {batch, qHeads, queries, keys};
  const double softcap = floatAttr(node, "softcap", 0.0f);
  if (softcap > 0) {
    std::string cap = converter.addStepConstant(node, "softcap",
                                                scalarTensor(dtype, softcap));
    scores = converter.addStep(
        node, "mul",
        {converter.addStep(
             node, "tanh",
             {converter.addStep(node, "div", {scores, cap}, "capped_scaled")},
             "capped_tanh"),
         cap},
        "capped");
  }

  // The bias: 0 where a key is attended, -inf where not, plus a float mask.
  const std::string zero =
      converter.addStepConstant(node, "zero", scalarTensor(dtype, 0.0));
  const std::string minusInfinity = converter.addStepConstant(
      node, "minus_infinity",
      scalarTensor(dtype, -std::numeric_limits<double>::infinity()));
  std::string bias;
  auto addBias = [&](const std::string &term, const std::string &suffix) {
    bias = bias.empty() ? term
                        : converter.addStep(node, "add", {bias, term}, suffix);
  };
  auto allowedBias = [&](const std::string &allowed,
                         const std::string &suffix) {
    return converter.addStep(node, "select", {allowed, zero, minusInfinity},
                             suffix);
  };
  if (!mask.empty()) {
    Shape maskShape = converter.requireShape(mask, "Attention's attn_mask");
    DType maskType = converter.requireDType(mask, "Attention's attn_mask");
    if (maskType != DType::I1 && maskType != dtype)
      throw Unsupported{"attn_mask must be bool or Q's dtype"};
    if (maskShape.empty() || maskShape.size() > 4 || maskShape.back() > keys)
      throw Unsupported{"attn_mask must broadcast to [" +
                        formatShape(scoreShape) + "] (its last dim at most " +
                        std::to_string(keys) + ")"};
    std::string padded = mask;
    if (maskShape.back() < keys) {
      // A mask shorter than the keys leaves the rest masked.
      std::vector<int64_t> pads(2 * maskShape.size(), 0);
      pads.back() = keys - maskShape.back();
      padded = converter.addStep(
          node, "pad", {mask}, "mask_padded",
          {{"pads", pads},
           {"constant_value", maskType == DType::I1
                                  ? 0.0
                                  : -std::numeric_limits<double>::infinity()}});
    }
    addBias(maskType == DType::I1 ? allowedBias(padded, "mask_bias") : padded,
            "mask_bias");
  }
  // Each query's absolute position: its index plus the past's length, or
  // per batch nonpad_kv_seqlen - queries (then [B, 1, S, 1]).
  std::string position;
  auto queryPositions = [&] {
    if (!position.empty())
      return position;
    if (nonpad.empty()) {
      Tensor positions(DType::I64, {queries, 1});
      for (int64_t i = 0; i < queries; ++i)
        positions.set(i, static_cast<double>(i + pastLength));
      return position =
                 converter.addStepConstant(node, "query_positions", positions);
    }
    std::string offset = converter.addStep(
        node, "sub",
        {viewStep(converter, node, nonpad, {batch, 1, 1, 1}, "nonpad_column"),
         converter.addStepConstant(node, "queries",
                                   scalarTensor(DType::I64, queries))},
        "query_offset");
    return position = converter.addStep(
               node, "add",
               {offset, converter.addStepConstant(node, "query_indices",
                                                  indicesAlong(4, 2, queries))},
               "query_positions");
  };
  const std::string keyIndices =
      converter.addStepConstant(node, "key_indices", indicesAlong(2, 1, keys));
  if (!nonpad.empty() &&
      converter.requireDType(nonpad, "nonpad_kv_seqlen") != DType::I64)
    throw Unsupported{"nonpad_kv_seqlen must be int64"};
  if (intAttr(node, "is_causal", 0) != 0)
    addBias(allowedBias(converter.addStep(node, "le",
                                          {keyIndices, queryPositions()},
                                          "causal_allowed"),
                        "causal_bias"),
            "causal_bias_added");
  const int64_t left = intAttr(node, "left_window_size", -1),
                right = intAttr(node, "right_window_size", -1);
  if (left < -1 || right < -1)
    throw Unsupported{"window sizes must be -1 or nonnegative"};
  if (left >= 0 || right >= 0) {
    std::string distance = converter.addStep(
        node, "sub", {queryPositions(), keyIndices}, "key_distance");
    std::string allowed;
    auto allow = [&](const std::string &test) {
      allowed = allowed.empty()
                    ? test
                    : converter.addStep(node, "and", {allowed, test},
                                        "window_allowed");
    };
    if (left >= 0)
      allow(converter.addStep(
          node, "le",
          {distance,
           converter.addStepConstant(node, "left_window",
                                     scalarTensor(DType::I64, double(left)))},
          "left_allowed"));
    if (right >= 0)
      allow(converter.addStep(
          node, "ge",
          {distance,
           converter.addStepConstant(node, "right_window",
                                     scalarTensor(DType::I64, -double(right)))},
          "right_allowed"));
    addBias(allowedBias(allowed, "window_bias"), "window_bias_added");
  }
  if (!nonpad.empty())
    addBias(allowedBias(
                converter.addStep(node, "lt",
                                  {viewStep(converter, node, keyIndices,
                                            {1, 1, 1, keys}, "key_row"),
                                   viewStep(converter, node, nonpad,
                                            {batch, 1, 1, 1}, "valid_keys")},
                                  "key_valid"),
                "padding_bias"),
            "padding_bias_added");
  std::string biased =
      bias.empty()
          ? scores
          : converter.addStep(node, "add", {scores, bias}, "biased_scores");

  // Softmax over the keys, in softmax_precision if given; rows the bias
  // masks entirely are zeros.
  std::string logits = biased;
  DType softmaxType = dtype;
  if (node.attrs.count("softmax_precision")) {
    int64_t precision = intAttr(node, "softmax_precision", 0);
    std::optional<DType> type = dtypeOfOnnx(static_cast<int32_t>(precision));
    if (!type || !isFloat(*type))
      throw Unsupported{"softmax_precision must be a float type, not " +
                        std::to_string(precision)};
    softmaxType = *type;
    if (softmaxType != dtype)
      logits = converter.addStep(node, "cast", {biased}, "softmax_input",
                                 {{"dtype", std::string(dtypeName(*type))}});
  }
  std::string probabilities = converter.addStep(
      node, "softmax", {logits}, "probabilities", {{"axis", int64_t(-1)}});
  if (!bias.empty()) {
    std::string rowMasked = converter.addStep(
        node, "eq",
        {converter.addStep(
             node, "reduce_max", {bias}, "bias_row_max",
             {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t(1)}}),
         minusInfinity},
        "row_masked");
    probabilities = converter.addStep(
        node, "select",
        {rowMasked,
         converter.addStepConstant(node, "softmax_zero",
                                   scalarTensor(softmaxType, 0.0)),
         probabilities},
        "probabilities_guarded");
  }
  if (softmaxType != dtype)
    probabilities =
        converter.addStep(node, "cast", {probabilities}, "probabilities_cast",
                          {{"dtype", std::string(dtypeName(dtype))}});
  switch (intAttr(node, "qk_matmul_output_mode", 0)) {
  case 0:
  case 1:
    emitOutput(3, scores, scoreShape);
    break;
  case 2:
    emitOutput(3, biased, scoreShape);
    break;
  case 3:
    emitOutput(3, probabilities, scoreShape);
    break;
  default:
    throw Unsupported{"qk_matmul_output_mode must be 0 to 3"};
  }
  node.outputs.resize(1);
  node.attrs.clear();
  // ONNX 1.12 infers nothing of an op newer than it.
  converter.recordValue(node.outputs[0],
                        heads3d ? Shape{batch, queries, qHeads * vShape[3]}
                                : Shape{batch, qHeads, queries, vShape[3]},
                        dtype);
  if (!heads3d) {
    node.op = "matmul";
    node.inputs = {probabilities, valuesRepeated};
    return;
  }
  std::string attended = converter.addStep(
      node, "matmul", {probabilities, valuesRepeated}, "attended");
  std::string merged =
      converter.addStep(node, "transpose", {attended}, "attended_by_query",
                        {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  becomeView(node, merged, {batch, queries, qHeads * vShape[3]});
}

/// RNN, GRU and LSTM, unrolled over the (static) sequence as ONNX's
/// reference evaluator computes them: x · W^T for every step in one
/// library matmul, then per step H · R^T (a matmul each), the biases and
/// the gates (LSTM: i, o, f, c with peepholes; GRU: z, r, h, with
/// linear_before_reset; RNN: one), the default activations (sigmoid for
/// gates, tanh otherwise); reverse runs the steps backwards, bidirectional
/// both. Y is [S, D, B, H] ([B, S, D, H] with layout 1), Y_h and Y_c the
/// last states.
void recurrentLayer(OnnxConverter &converter, const onnx::NodeProto &proto,
                    GraphNode &node) {
  const std::string &opType = proto.op_type();
  const bool lstm = opType == "LSTM", gru = opType == "GRU";
  const int64_t gates = lstm ? 4 : gru ? 3 : 1;
  auto input = [&](size_t i) { return nameOrEmpty(node.inputs, i); };
  const std::string x = input(0), w = input(1), r = input(2), b = input(3),
                    sequenceLengths = input(4), initialH = input(5),
                    initialC = lstm ? input(6) : "",
                    peepholes = lstm ? input(7) : "";
  if (w.empty() || r.empty())
    throw Unsupported{opType + " takes X, W and R"};
  // Only the default activations (given or not) are computed.
  const std::vector<std::string> defaults =
      lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
            : std::vector<std::string>{"Tanh"};
  for (const onnx::AttributeProto &attr : proto.attribute()) {
    if (attr.name() == "activations") {
      for (int i = 0; i < attr.strings_size(); ++i)
        if (attr.strings(i) != defaults[i % defaults.size()])
          throw Unsupported{opType + "'s activation " + attr.strings(i) +
                            " is not supported (only the defaults)"};
    } else if (attr.name() == "activation_alpha" ||
               attr.name() == "activation_beta" || attr.name() == "clip") {
      throw Unsupported{opType + "'s " + attr.name() + " is not supported"};
    }
  }
  if (intAttr(node, "input_forget", 0) != 0)
    throw Unsupported{"LSTM's input_forget is not supported"};
  const bool linearBeforeReset = intAttr(node, "linear_before_reset", 0) != 0;
  const bool batchFirst = intAttr(node, "layout", 0) != 0;
  std::string direction = "forward";
  if (auto it = node.attrs.find("direction"); it != node.attrs.end())
    direction = std::get<std::string>(it->second);
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    throw Unsupported{opType +
                      "'s direction must be forward, reverse or "
                      "bidirectional, not " +
                      direction};
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  const Shape xShape = converter.requireShape(x, opType),
              wShape = converter.requireShape(w, opType),
              rShape = converter.requireShape(r, opType);
  const DType dtype = converter.requireDType(x, opType);
  if (!isFloat(dtype))
    throw Unsupported{opType + " takes floats"};
  if (xShape.size() != 3 || wShape.size() != 3 || rShape.size() != 3)
    throw Unsupported{opType + "'s X, W and R must be 3-D"};
  const int64_t steps = batchFirst ? xShape[1] : xShape[0],
                batch = batchFirst ? xShape[0] : xShape[1],
                inputSize = xShape[2], hidden = rShape[2];
  if (wShape != Shape{directions, gates * hidden, inputSize} ||
      rShape != Shape{directions, gates * hidden, hidden})
    throw Unsupported{
        opType + "'s W must be [" + std::to_string(directions) + ", " +
        std::to_string(gates * hidden) + ", " + std::to_string(inputSize) +
        "] and R [" + std::to_string(directions) + ", " +
        std::to_string(gates * hidden) + ", " + std::to_string(hidden) + "]"};
  if (int64_t given = intAttr(node, "hidden_size", hidden); given != hidden)
    throw Unsupported{"hidden_size " + std::to_string(given) + " is not R's " +
                      std::to_string(hidden)};
  // sequence_lens: only every sequence at the full length (a constant).
  if (!sequenceLengths.empty()) {
    const Tensor *lengths = converter.constantOrNull(sequenceLengths);
    bool allFull = lengths != nullptr;
    for (int64_t i = 0; allFull && i < lengths->numElements(); ++i)
      allFull = lengths->at(i) == static_cast<double>(steps);
    if (!allFull)
      throw Unsupported{opType +
                        "'s sequence_lens must be a constant of the "
                        "full length " +
                        std::to_string(steps) +
                        " (sequences of different lengths are not supported)"};
  }
  if (steps * directions > 4096)
    throw Unsupported{opType + " of " + std::to_string(steps) +
                      " steps is unrolled; more than 4096 is not supported"};
  // Output names: the node's first requested output names the steps.
  std::vector<std::string> outputs = node.outputs;
  outputs.resize(3);
  std::string base;
  for (const std::string &output : outputs)
    if (base.empty())
      base = output;
  node.outputs = {outputs[0].empty() ? base + "_sequence" : outputs[0]};
  auto step = [&](const char *op, std::vector<std::string> inputs,
                  const std::string &suffix,
                  std::map<std::string, AttrValue> attrs = {}) {
    return converter.addStep(node, op, std::move(inputs), suffix,
                             std::move(attrs));
  };
  auto lastDims = [&](const std::string &value, int64_t start, int64_t end,
                      int64_t axis, const std::string &suffix) {
    return step("slice", {value}, suffix,
                {{"starts", std::vector<int64_t>{start}},
                 {"ends", std::vector<int64_t>{end}},
                 {"axes", std::vector<int64_t>{axis}},
                 {"steps", std::vector<int64_t>{1}}});
  };
  auto transposed = [&](const std::string &value, const std::string &suffix) {
    return step("transpose", {value}, suffix,
                {{"perm", std::vector<int64_t>{1, 0}}});
  };
  // X as [S, B, I].
  const std::string sequence =
      batchFirst ? step("transpose", {x}, "by_step",
                        {{"perm", std::vector<int64_t>{1, 0, 2}}})
                 : x;
  const std::string zeros = converter.addStepConstant(
      node, "zero_state", Tensor(dtype, {batch, hidden}));
  std::vector<std::string> sequences, lastH, lastC;
  for (int64_t d = 0; d < directions; ++d) {
    const std::string tag = "d" + std::to_string(d);
    // Direction d's part of a parameter (its dim 0; dim 1 for the states
    // with layout 1), as `rest`.
    auto ofDirection = [&](const std::string &value, const Shape &rest,
                           const std::string &suffix, int64_t axis = 0) {
      return viewStep(
          converter, node,
          directions == 1
              ? value
              : lastDims(value, d, d + 1, axis, tag + "_" + suffix + "_sliced"),
          rest, tag + "_" + suffix);
    };
    const int64_t stateAxis = batchFirst ? 1 : 0;
    const std::string wd = ofDirection(w, {gates * hidden, inputSize}, "w");
    const std::string rd = ofDirection(r, {gates * hidden, hidden}, "r");
    // x · W^T for every step: [S, B, G*H].
    const std::string inputs =
        step("matmul", {sequence, transposed(wd, tag + "_wt")},
             tag + "_input_gates");
    // Per gate k: the slice of x · W^T, R_k^T and the biases.
    std::string biasW, biasR;
    if (!b.empty()) {
      std::string bd = ofDirection(b, {2 * gates * hidden}, "b");
      biasW = lastDims(bd, 0, gates * hidden, 0, tag + "_wb");
      biasR = lastDims(bd, gates * hidden, 2 * gates * hidden, 0, tag + "_rb");
    }
    auto gateSlice = [&](const std::string &value, int64_t first, int64_t count,
                         int64_t axis, const std::string &suffix) {
      return lastDims(value, first * hidden, (first + count) * hidden, axis,
                      suffix);
    };
    std::string h = initialH.empty() ? zeros
                                     : ofDirection(initialH, {batch, hidden},
                                                   "h0", stateAxis);
    std::string c = !lstm              ? ""
                    : initialC.empty() ? zeros
                                       : ofDirection(initialC, {batch, hidden},
                                                     "c0", stateAxis);
    std::vector<std::string> peep(3);
    if (lstm && !peepholes.empty()) {
      std::string pd = ofDirection(peepholes, {3 * hidden}, "p");
      for (int k = 0; k < 3; ++k)
        peep[k] = gateSlice(pd, k, 1, 0, tag + "_p" + std::to_string(k));
    }
    // Gate bias sums, per group of gates as the reference adds them.
    const int64_t fused = gru ? 2 : gates; // GRU: z and r together
    std::string gateBias;
    if (!b.empty())
      gateBias = step("add",
                      {gateSlice(biasW, 0, fused, 0, tag + "_wb_gates"),
                       gateSlice(biasR, 0, fused, 0, tag + "_rb_gates")},
                      tag + "_gate_bias");
    const std::string rGates = transposed(
        gateSlice(rd, 0, fused, 0, tag + "_r_gates"), tag + "_r_gates_t");
    std::string rCandidate, wbCandidate, rbCandidate;
    if (gru) {
      rCandidate =
          transposed(gateSlice(rd, 2, 1, 0, tag + "_r_h"), tag + "_r_h_t");
      if (!b.empty()) {
        wbCandidate = gateSlice(biasW, 2, 1, 0, tag + "_wb_h");
        rbCandidate = gateSlice(biasR, 2, 1, 0, tag + "_rb_h");
      }
    }
    const std::string one =
        converter.addStepConstant(node, tag + "_one", scalarTensor(dtype, 1));
    std::vector<std::string> hs(steps);
    for (int64_t i = 0; i < steps; ++i) {
      const int64_t t = d == 1 || direction == "reverse" ? steps - 1 - i : i;
      const std::string at = tag + "_t" + std::to_string(t);
      const std::string xw = viewStep(
          converter, node, lastDims(inputs, t, t + 1, 0, at + "_xw_step"),
          {batch, gates * hidden}, at + "_xw");
      std::string g = step("add",
                           {gateSlice(xw, 0, fused, 1, at + "_xw_gates"),
                            step("matmul", {h, rGates}, at + "_hr")},
                           at + "_gates_sum");
      if (!gateBias.empty())
        g = step("add", {g, gateBias}, at + "_gates");
      auto gate = [&](int64_t k, const std::string &suffix) {
        return gateSlice(g, k, 1, 1, at + "_" + suffix);
      };
      if (lstm) {
        auto withPeephole = [&](std::string value, int k,
                                const std::string &cell,
                                const std::string &suffix) {
          if (!peep[k].empty())
            value = step("add",
                         {value, step("mul", {peep[k], cell},
                                      at + "_" + suffix + "_peep")},
                         at + "_" + suffix + "_peeped");
          return step("sigmoid", {value}, at + "_" + suffix + "_act");
        };
        std::string inGate = withPeephole(gate(0, "i"), 0, c, "i");
        std::string forget = withPeephole(gate(2, "f"), 2, c, "f");
        std::string cell = step("tanh", {gate(3, "c")}, at + "_c_act");
        c = step("add",
                 {step("mul", {forget, c}, at + "_kept"),
                  step("mul", {inGate, cell}, at + "_added")},
                 at + "_cell");
        std::string out = withPeephole(gate(1, "o"), 1, c, "o");
        h = step("mul", {out, step("tanh", {c}, at + "_cell_tanh")}, at + "_h");
      } else if (gru) {
        std::string z = step("sigmoid", {gate(0, "z")}, at + "_z_act");
        std::string reset = step("sigmoid", {gate(1, "r")}, at + "_r_act");
        std::string xh = gateSlice(xw, 2, 1, 1, at + "_xw_h");
        std::string candidate;
        if (linearBeforeReset) {
          std::string hr = step("matmul", {h, rCandidate}, at + "_hr_h");
          if (!rbCandidate.empty())
            hr = step("add", {hr, rbCandidate}, at + "_hr_h_biased");
          candidate =
              step("add", {xh, step("mul", {reset, hr}, at + "_reset_hr")},
                   at + "_candidate_sum");
          if (!wbCandidate.empty())
            candidate =
                step("add", {candidate, wbCandidate}, at + "_candidate_biased");
        } else {
          candidate = step(
              "add",
              {xh, step("matmul",
                        {step("mul", {reset, h}, at + "_reset_h"), rCandidate},
                        at + "_rh_h")},
              at + "_candidate_sum");
          if (!wbCandidate.empty())
            candidate = step(
                "add",
                {step("add", {candidate, wbCandidate}, at + "_candidate_wb"),
                 rbCandidate},
                at + "_candidate_biased");
        }
        candidate = step("tanh", {candidate}, at + "_candidate");
        h = step(
            "add",
            {step("mul", {step("sub", {one, z}, at + "_keep_new"), candidate},
                  at + "_new"),
             step("mul", {z, h}, at + "_old")},
            at + "_h");
      } else {
        h = step("tanh", {g}, at + "_h");
      }
      hs[t] = viewStep(converter, node, h, {1, 1, batch, hidden}, at + "_y");
    }
    sequences.push_back(steps == 1 ? hs[0]
                                   : step("concat", hs, tag + "_sequence",
                                          {{"axis", int64_t(0)}}));
    lastH.push_back(
        viewStep(converter, node, h, {1, batch, hidden}, tag + "_last_h"));
    if (lstm)
      lastC.push_back(
          viewStep(converter, node, c, {1, batch, hidden}, tag + "_last_c"));
  }
  auto joined = [&](const std::vector<std::string> &parts, int64_t axis,
                    const std::string &suffix) {
    return parts.size() == 1 ? parts[0]
                             : step("concat", parts, suffix, {{"axis", axis}});
  };
  // The states: [D, B, H], or [B, D, H] with layout 1.
  auto emitState = [&](size_t index, const std::vector<std::string> &parts,
                       const std::string &suffix) {
    if (outputs[index].empty())
      return;
    std::string state = joined(parts, 0, suffix);
    if (batchFirst)
      state = step("transpose", {state}, suffix + "_by_batch",
                   {{"perm", std::vector<int64_t>{1, 0, 2}}});
    converter.addOutputStep(
        node, "reshape", {state}, outputs[index],
        {{"shape", batchFirst
                       ? std::vector<int64_t>{batch, directions, hidden}
                       : std::vector<int64_t>{directions, batch, hidden}},
         {"allowzero", int64_t(1)}});
    converter.recordValue(outputs[index],
                          batchFirst ? Shape{batch, directions, hidden}
                                     : Shape{directions, batch, hidden},
                          dtype);
  };
  emitState(1, lastH, "final_h");
  if (lstm)
    emitState(2, lastC, "final_c");
  std::string y = joined(sequences, 1, "all_directions");
  node.attrs.clear();
  if (batchFirst) {
    node.op = "transpose";
    node.inputs = {y};
    node.attrs = {{"perm", std::vector<int64_t>{2, 0, 1, 3}}};
  } else {
    becomeView(node, y, {steps, directions, batch, hidden});
  }
  converter.recordValue(node.outputs[0],
                        batchFirst ? Shape{batch, steps, directions, hidden}
                                   : Shape{steps, directions, batch, hidden},
                        dtype);
}

/// The discrete Fourier transform of `x` (real [..., 1] or complex [...,
/// 2], shaped `shape`) along `axis` at `length` points, as NumPy's fft the
/// reference evaluator calls: the signal cut or zero-padded to `length`,
/// then a matmul (in f64) by constant cos and sin tables per output bin;
/// `onesided` keeps the bins up to length / 2 (forward) or takes them as
/// a Hermitian spectrum and gives a real signal (inverse: irfft); the
/// inverse divides by `length`. Returns the result, [..., 2] or [..., 1],
/// in x's dtype.
std::string fourierTransform(OnnxConverter &converter, GraphNode &node,
                             const std::string &x, const Shape &shape,
                             DType dtype, int64_t axis, int64_t length,
                             bool inverse, bool onesided,
                             const std::string &tag) {
  const int64_t rank = shape.size();
  if (!isFloat(dtype))
    throw Unsupported{"DFT takes floats"};
  if (rank < 2 || (shape.back() != 1 && shape.back() != 2))
    throw Unsupported{"DFT's input must end in a dim of 1 (real) or 2 "
                      "(complex), not [" +
                      formatShape(shape) + "]"};
  if (axis < 0 || axis >= rank - 1)
    throw Unsupported{"DFT's axis must be a signal dim"};
  if (length < 1)
    throw Unsupported{"DFT's length must be positive"};
  const bool complex = shape.back() == 2;
  const bool realResult = inverse && onesided;
  const int64_t samples = shape[axis];
  const int64_t bins = realResult || !onesided ? length : length / 2 + 1;
  checkConstantElements(samples * bins, "DFT's tables");
  auto step = [&](const char *op, std::vector<std::string> inputs,
                  const std::string &suffix,
                  std::map<std::string, AttrValue> attrs = {}) {
    return converter.addStep(node, op, std::move(inputs), tag + suffix,
                             std::move(attrs));
  };
  // The real and imaginary parts with the signal axis last, in f64.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  Shape partShape(shape.begin(), shape.end() - 1);
  auto part = [&](int64_t index, const std::string &suffix) {
    std::string sliced = step("slice", {x}, suffix + "_sliced",
                              {{"starts", std::vector<int64_t>{index}},
                               {"ends", std::vector<int64_t>{index + 1}},
                               {"axes", std::vector<int64_t>{rank - 1}},
                               {"steps", std::vector<int64_t>{1}}});
    std::string moved = step(
        "transpose",
        {viewStep(converter, node, sliced, partShape, tag + suffix + "_part")},
        suffix + "_moved", {{"perm", perm}});
    return dtype == DType::F64 ? moved
                               : step("cast", {moved}, suffix + "_f64",
                                      {{"dtype", std::string("f64")}});
  };
  const std::string real = part(0, "_real");
  const std::string imaginary = complex ? part(1, "_imaginary") : "";
  // Tables [samples, bins]: sample n (past `length` cut off, n up to
  // length / 2 for irfft) against bin k.
  const double pi = std::acos(-1.0);
  Tensor cosines(DType::F64, {samples, bins}),
      sines(DType::F64, {samples, bins});
  for (int64_t n = 0; n < samples; ++n)
    for (int64_t k = 0; k < bins; ++k) {
      bool used = n < length && (!realResult || n <= length / 2);
      double angle = 2 * pi * static_cast<double>((n * k) % length) /
                     static_cast<double>(length);
      double scale = !used      ? 0.0
                     : !inverse ? 1.0
                                : 1.0 / static_cast<double>(length);
      // irfft counts each bin but 0 and length / 2 twice (its conjugate).
      if (realResult && n != 0 && !(length % 2 == 0 && n == length / 2))
        scale *= 2;
      cosines.set(n * bins + k, scale * std::cos(angle));
      sines.set(n * bins + k, scale * std::sin(angle));
    }
  const std::string cosTable =
      converter.addStepConstant(node, tag + "_cos", std::move(cosines));
  const std::string sinTable =
      converter.addStepConstant(node, tag + "_sin", std::move(sines));
  auto product = [&](const std::string &value, const std::string &table,
                     const std::string &suffix) {
    return step("matmul", {value, table}, suffix);
  };
  // Forward: re = xr c + xi s, im = xi c - xr s; inverse: the signs of s
  // flip.
  std::string outReal = product(real, cosTable, "_rc");
  std::string outImaginary;
  if (complex) {
    std::string is = product(imaginary, sinTable, "_is");
    outReal = step(inverse ? "sub" : "add", {outReal, is}, "_out_real");
  }
  if (!realResult) {
    std::string rs = product(real, sinTable, "_rs");
    if (complex) {
      std::string ic = product(imaginary, cosTable, "_ic");
      outImaginary = step(inverse ? "add" : "sub", {ic, rs}, "_out_imaginary");
    } else {
      outImaginary = inverse ? rs : step("neg", {rs}, "_out_imaginary");
    }
  }
  // Back to the input's layout with the complex dim last.
  std::vector<int64_t> back(rank - 1);
  for (int64_t d = 0; d < rank - 1; ++d)
    back[perm[d]] = d;
  Shape outPart = partShape;
  outPart[axis] = bins;
  Shape withComplex = outPart;
  withComplex.push_back(1);
  auto restore = [&](const std::string &value, const std::string &suffix) {
    std::string moved =
        step("transpose", {value}, suffix + "_back", {{"perm", back}});
    std::string cast = dtype == DType::F64
                           ? moved
                           : step("cast", {moved}, suffix + "_cast",
                                  {{"dtype", std::string(dtypeName(dtype))}});
    return viewStep(converter, node, cast, withComplex, tag + suffix + "_out");
  };
  if (realResult)
    return restore(outReal, "_real_result");
  return step("concat",
              {restore(outReal, "_real_result"),
               restore(outImaginary, "_imaginary_result")},
              "_spectrum", {{"axis", rank - 1}});
}

/// DFT (opset 17; its axis an input from 20).
void dft(OnnxConverter &converter, const onnx::NodeProto &, GraphNode &node) {
  const std::string x = node.inputs.at(0);
  const Shape shape = converter.requireShape(x, "DFT");
  const int64_t rank = shape.size();
  int64_t axis = converter.opset >= 20 ? -2 : intAttr(node, "axis", 1);
  if (converter.opset >= 20 && node.inputs.size() > 2 &&
      !node.inputs[2].empty()) {
    std::vector<int64_t> given = integersOf(
        converter.constantValue(node.inputs[2], "DFT's axis"), "DFT's axis");
    if (given.size() != 1)
      throw Unsupported{"DFT's axis must be one integer"};
    axis = given[0];
  }
  if (axis < -rank || axis >= rank)
    throw Unsupported{"DFT's axis " + std::to_string(axis) +
                      " is out of range for rank " + std::to_string(rank)};
  axis = (axis + rank) % rank;
  const bool inverse = intAttr(node, "inverse", 0) != 0;
  const bool onesided = intAttr(node, "onesided", 0) != 0;
  int64_t length =
      inverse && onesided ? 2 * (shape.at(axis) - 1) : shape.at(axis);
  if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    std::vector<int64_t> given =
        integersOf(converter.constantValue(node.inputs[1], "DFT's dft_length"),
                   "DFT's dft_length");
    if (given.size() != 1)
      throw Unsupported{"DFT's dft_length must be one integer"};
    length = given[0];
  }
  std::string result = fourierTransform(converter, node, x, shape,
                                        converter.requireDType(x, "DFT"), axis,
                                        length, inverse, onesided, "dft");
  Shape out = shape;
  out[axis] = inverse && onesided ? length : onesided ? length / 2 + 1 : length;
  out.back() = inverse && onesided ? 1 : 2;
  becomeView(node, result, out);
}

/// STFT (opset 17): frames of frame_length samples every frame_step,
/// weighted by the window, each transformed (onesided by default).
void shortTimeFourier(OnnxConverter &converter, const onnx::NodeProto &,
                      GraphNode &node) {
  auto input = [&](size_t i) { return nameOrEmpty(node.inputs, i); };
  const std::string x = input(0), stepInput = input(1), window = input(2),
                    lengthInput = input(3);
  const Shape shape = converter.requireShape(x, "STFT");
  if (shape.size() != 3)
    throw Unsupported{"STFT's signal must be [batch, length, 1 or 2]"};
  auto single = [&](const std::string &name, const char *what) {
    std::vector<int64_t> values =
        integersOf(converter.constantValue(name, what), what);
    if (values.size() != 1)
      throw Unsupported{std::string(what) + " must be one integer"};
    return values[0];
  };
  if (stepInput.empty())
    throw Unsupported{"STFT needs its frame_step"};
  const int64_t frameStep = single(stepInput, "STFT's frame_step");
  int64_t frameLength = shape[1];
  if (!lengthInput.empty())
    frameLength = single(lengthInput, "STFT's frame_length");
  else if (!window.empty())
    frameLength = converter.requireShape(window, "STFT's window").at(0);
  const int64_t windowLength =
      window.empty() ? frameLength
                     : converter.requireShape(window, "STFT's window").at(0);
  if (frameStep < 1 || frameLength < 1 || windowLength > shape[1] ||
      windowLength < 1)
    throw Unsupported{"STFT's frame_step and frame_length must be positive "
                      "and the frames fit the signal"};
  const int64_t frames = 1 + (shape[1] - frameLength) / frameStep;
  if (frames < 1)
    throw Unsupported{"STFT's signal is shorter than a frame"};
  checkConstantElements(frames * windowLength, "STFT's frame table");
  // [batch, frames, window, 1 or 2]: a gather of each frame's samples.
  Tensor positions(DType::I64, {frames, windowLength});
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t i = 0; i < windowLength; ++i)
      positions.set(f * windowLength + i,
                    static_cast<double>(f * frameStep + i));
  std::string framed =
      converter.addStep(node, "gather",
                        {x, converter.addStepConstant(node, "frame_positions",
                                                      std::move(positions))},
                        "frames", {{"axis", int64_t(1)}});
  if (!window.empty())
    framed = converter.addStep(
        node, "mul",
        {framed, viewStep(converter, node, window, {1, 1, windowLength, 1},
                          "window_column")},
        "windowed");
  const bool onesided = intAttr(node, "onesided", 1) != 0;
  std::string result = fourierTransform(
      converter, node, framed, {shape[0], frames, windowLength, shape[2]},
      converter.requireDType(x, "STFT"), 2, frameLength, false, onesided,
      "stft");
  becomeView(
      node, result,
      {shape[0], frames, onesided ? frameLength / 2 + 1 : frameLength, 2});
}

/// GridSample (opset 16 on; any spatial rank from 20): each output point
/// samples the input at the grid's normalized coordinates, as ONNX's
/// reference evaluator computes it: the coordinates denormalized (in f32),
/// those outside the border clamped (border) or reflected (reflection, in
/// f64), then the nearest pixel, or 2 (linear) or 4 (cubic, A = -0.75)
/// taps per dim weighted and summed from the last dim out; taps outside the
/// input are 0 (zeros), clamped (border) or reflected (reflection).
/// Every tap is a gather from the flattened input.
void gridSample(OnnxConverter &converter, const onnx::NodeProto &proto,
                GraphNode &node) {
  const std::string &opType = proto.op_type();
  if (node.inputs.size() != 2 || node.inputs[1].empty())
    throw Unsupported{"GridSample takes X and grid"};
  const std::string x = node.inputs[0], grid = node.inputs[1];
  const Shape shape = converter.requireShape(x, opType),
              gridShape = converter.requireShape(grid, opType);
  const DType dtype = converter.requireDType(x, opType),
              gridType = converter.requireDType(grid, opType);
  if (!isFloat(dtype) || !isFloat(gridType))
    throw Unsupported{"GridSample takes floats"};
  const int64_t rank = shape.size(), spatial = rank - 2;
  if (spatial < 1 || static_cast<int64_t>(gridShape.size()) != rank ||
      gridShape.back() != spatial || gridShape[0] != shape[0])
    throw Unsupported{"GridSample's grid must be [N, out..., " +
                      std::to_string(spatial) + "] for X [" +
                      formatShape(shape) + "]"};
  if (converter.opset < 20 && spatial != 2)
    throw Unsupported{"GridSample takes 4-D inputs before opset 20"};
  for (int64_t d = 2; d < rank; ++d)
    if (shape[d] < 1)
      throw Unsupported{"GridSample's input [" + formatShape(shape) +
                        "] has an empty spatial dim to sample"};
  std::string mode = "linear", padding = "zeros";
  if (auto it = node.attrs.find("mode"); it != node.attrs.end())
    mode = std::get<std::string>(it->second);
  if (auto it = node.attrs.find("padding_mode"); it != node.attrs.end())
    padding = std::get<std::string>(it->second);
  // Opset 16's names of the modes.
  if (mode == "bilinear")
    mode = "linear";
  else if (mode == "bicubic")
    mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    throw Unsupported{"GridSample's mode must be linear, nearest or cubic, "
                      "not " +
                      mode};
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    throw Unsupported{"GridSample's padding_mode must be zeros, border or "
                      "reflection, not " +
                      padding};
  const bool alignCorners = intAttr(node, "align_corners", 0) != 0;
  const int64_t batch = shape[0], channels = shape[1];
  Shape outPoints(gridShape.begin() + 1, gridShape.end() - 1);
  int64_t points = numElements(outPoints), area = 1;
  for (int64_t d = 2; d < rank; ++d)
    area *= shape[d];
  checkConstantElements(batch * channels, "GridSample's batch offsets");
  // Per point: [N, 1, points] values; the grid's last dim lists x (the
  // last spatial dim) first.
  const Shape pointShape = {batch, 1, points};
  auto constant = [&](DType type, double value, const std::string &suffix) {
    return converter.addStepConstant(node, suffix, scalarTensor(type, value));
  };
  auto step = [&](const char *op, std::vector<std::string> inputs,
                  const std::string &suffix,
                  std::map<std::string, AttrValue> attrs = {}) {
    return converter.addStep(node, op, std::move(inputs), suffix,
                             std::move(attrs));
  };
  const DType f32 = DType::F32, f64 = DType::F64, i64 = DType::I64;
  auto castTo = [&](const std::string &value, DType type,
                    const std::string &suffix) {
    return step("cast", {value}, suffix,
                {{"dtype", std::string(dtypeName(type))}});
  };
  // The border of dim d's coordinates, and the reflection into it (f64, as
  // the reference's Python floats).
  auto bounds = [&](int64_t d) {
    double length = static_cast<double>(shape[d + 2]);
    return alignCorners ? std::pair{0.0, length - 1}
                        : std::pair{-0.5, length - 0.5};
  };
  auto reflect = [&](const std::string &value, int64_t d,
                     const std::string &suffix) {
    auto [low, high] = bounds(d);
    std::string v = value, lowC = constant(f64, low, suffix + "_low"),
                highC = constant(f64, high, suffix + "_high"),
                range = constant(f64, high - low, suffix + "_range"),
                two = constant(f64, 2, suffix + "_two"),
                zero = constant(f64, 0, suffix + "_zero");
    auto folded = [&](const std::string &distance, const std::string &near,
                      const std::string &far, const std::string &tag) {
      std::string turns =
          step("floor", {step("div", {distance, range}, tag + "_ratio")},
               tag + "_turns");
      std::string rest =
          step("sub", {distance, step("mul", {turns, range}, tag + "_span")},
               tag + "_rest");
      std::string even =
          step("eq", {step("mod", {turns, two}, tag + "_parity"), zero},
               tag + "_even");
      // An even number of turns leaves it the near border's distance in.
      return step(
          "select",
          {even,
           step(near == lowC ? "add" : "sub", {near, rest}, tag + "_from_near"),
           step(near == lowC ? "sub" : "add", {far, rest}, tag + "_from_far")},
          tag + "_folded");
    };
    std::string below = folded(step("sub", {lowC, v}, suffix + "_below_by"),
                               lowC, highC, suffix + "_below");
    std::string above = folded(step("sub", {v, highC}, suffix + "_above_by"),
                               highC, lowC, suffix + "_above");
    return step("select",
                {step("lt", {v, lowC}, suffix + "_is_below"), below,
                 step("select",
                      {step("gt", {v, highC}, suffix + "_is_above"), above, v},
                      suffix + "_upper")},
                suffix + "_reflected");
  };
  // The coordinate along each spatial dim, in f32.
  std::vector<std::string> coordinates(spatial);
  for (int64_t d = 0; d < spatial; ++d) {
    const std::string tag = "dim" + std::to_string(d);
    int64_t component = spatial - 1 - d;
    std::string normalized =
        viewStep(converter, node,
                 step("slice", {grid}, tag + "_normalized",
                      {{"starts", std::vector<int64_t>{component}},
                       {"ends", std::vector<int64_t>{component + 1}},
                       {"axes", std::vector<int64_t>{spatial + 1}},
                       {"steps", std::vector<int64_t>{1}}}),
                 pointShape, tag + "_points");
    const double length = static_cast<double>(shape[d + 2]);
    std::string one = constant(gridType, 1, tag + "_one");
    std::string shifted = step("add", {normalized, one}, tag + "_shifted");
    std::string denormalized =
        alignCorners
            ? step("mul",
                   {step("div", {shifted, constant(gridType, 2, tag + "_two")},
                         tag + "_half"),
                    constant(gridType, length - 1, tag + "_span")},
                   tag + "_position")
            : step("div",
                   {step("sub",
                         {step("mul",
                               {shifted,
                                constant(gridType, length, tag + "_length")},
                               tag + "_scaled"),
                          one},
                         tag + "_offset"),
                    constant(gridType, 2, tag + "_two")},
                   tag + "_position");
    std::string value = gridType == f32
                            ? denormalized
                            : castTo(denormalized, f32, tag + "_f32");
    if (mode == "nearest")
      value = step("round", {value}, tag + "_nearest");
    if (padding != "zeros") {
      auto [low, high] = bounds(d);
      std::string outside =
          step("or",
               {step("lt", {value, constant(f32, low, tag + "_border_low")},
                     tag + "_below_border"),
                step("gt", {value, constant(f32, high, tag + "_border_high")},
                     tag + "_above_border")},
               tag + "_outside");
      std::string moved = padding == "border"
                              ? step("clip",
                                     {value, constant(f32, 0, tag + "_first"),
                                      constant(f32, length - 1, tag + "_last")},
                                     tag + "_clamped")
                              : castTo(reflect(castTo(value, f64, tag + "_f64"),
                                               d, tag + "_reflect"),
                                       f32, tag + "_reflected_f32");
      value = step("select", {outside, moved, value}, tag + "_inside");
    }
    coordinates[d] = value;
  }
  // Offsets of each (n, c) row of the flattened input.
  Tensor rowStarts(i64, {batch, channels, 1});
  for (int64_t r = 0; r < batch * channels; ++r)
    rowStarts.set(r, static_cast<double>(r * area));
  const std::string rows =
      converter.addStepConstant(node, "row_starts", std::move(rowStarts));
  const std::string flat =
      viewStep(converter, node, x, {batch * channels * area}, "flat");
  const std::string zeroValue = constant(dtype, 0, "zero_value");
  // The input at integer taps (one i64 [N, 1, points] index per dim),
  // padded as padding_mode says.
  int64_t fetches = 0;
  auto fetch = [&](const std::vector<std::string> &taps) {
    const std::string tag = "tap" + std::to_string(fetches++);
    std::string index, valid;
    int64_t stride = area;
    for (int64_t d = 0; d < spatial; ++d) {
      const std::string dimTag = tag + "_dim" + std::to_string(d);
      const int64_t length = shape[d + 2];
      stride /= length;
      std::string t = taps[d];
      if (padding == "reflection") {
        t = castTo(
            reflect(castTo(t, f64, dimTag + "_f64"), d, dimTag + "_reflect"),
            i64, dimTag + "_reflected");
      } else if (padding == "zeros") {
        std::string inside = step(
            "and",
            {step("ge", {t, constant(i64, 0, dimTag + "_zero")},
                  dimTag + "_from_start"),
             step("lt", {t, constant(i64, double(length), dimTag + "_end")},
                  dimTag + "_before_end")},
            dimTag + "_in_range");
        valid = valid.empty() ? inside
                              : step("and", {valid, inside}, dimTag + "_valid");
      }
      t = step("clip",
               {t, constant(i64, 0, dimTag + "_low"),
                constant(i64, double(length - 1), dimTag + "_high")},
               dimTag + "_clamped");
      std::string term =
          stride == 1
              ? t
              : step("mul",
                     {t, constant(i64, double(stride), dimTag + "_stride")},
                     dimTag + "_term");
      index =
          index.empty() ? term : step("add", {index, term}, dimTag + "_index");
    }
    std::string value =
        step("gather", {flat, step("add", {rows, index}, tag + "_flat_index")},
             tag + "_value", {{"axis", int64_t(0)}});
    if (!valid.empty())
      value = step("select", {valid, value, zeroValue}, tag + "_padded");
    return value;
  };
  std::string result;
  if (mode == "nearest") {
    std::vector<std::string> taps;
    for (int64_t d = 0; d < spatial; ++d)
      taps.push_back(
          castTo(coordinates[d], i64, "nearest" + std::to_string(d)));
    result = fetch(taps);
  } else {
    // Per dim: the tap below, the fraction past it and the taps' weights
    // (in X's dtype, computed in f32 as the reference does).
    const bool cubic = mode == "cubic";
    const int64_t count = cubic ? 4 : 2, first = cubic ? -1 : 0;
    std::vector<std::string> below(spatial);
    std::vector<std::vector<std::string>> weights(spatial);
    for (int64_t d = 0; d < spatial; ++d) {
      const std::string tag = "weights" + std::to_string(d);
      std::string floor = step("floor", {coordinates[d]}, tag + "_floor");
      below[d] = castTo(floor, i64, tag + "_below");
      std::string t = step("sub", {coordinates[d], floor}, tag + "_fraction");
      auto c = [&](double value, const std::string &suffix) {
        return constant(f32, value, tag + "_" + suffix);
      };
      std::vector<std::string> w;
      if (!cubic) {
        w = {step("sub", {c(1, "one"), t}, tag + "_w0"), t};
      } else {
        // Keys' cubic convolution with A = -0.75, term by term as the
        // reference writes it.
        const double a = -0.75;
        auto outer = [&](const std::string &s, const std::string &suffix) {
          // ((a * s - 5a) * s + 8a) * s - 4a
          std::string p = step("mul", {c(a, suffix + "_a"), s}, suffix + "_as");
          p = step("sub", {p, c(5 * a, suffix + "_5a")}, suffix + "_p1");
          p = step("mul", {p, s}, suffix + "_p2");
          p = step("add", {p, c(8 * a, suffix + "_8a")}, suffix + "_p3");
          p = step("mul", {p, s}, suffix + "_p4");
          return step("sub", {p, c(4 * a, suffix + "_4a")}, suffix + "_w");
        };
        auto inner = [&](const std::string &s, const std::string &suffix) {
          // ((a + 2) * s - (a + 3)) * s * s + 1
          std::string p =
              step("mul", {c(a + 2, suffix + "_a2"), s}, suffix + "_p1");
          p = step("sub", {p, c(a + 3, suffix + "_a3")}, suffix + "_p2");
          p = step("mul", {p, s}, suffix + "_p3");
          p = step("mul", {p, s}, suffix + "_p4");
          return step("add", {p, c(1, suffix + "_one")}, suffix + "_w");
        };
        std::string oneMinus = step("sub", {c(1, "one"), t}, tag + "_rest");
        w = {outer(step("add", {t, c(1, "one_b")}, tag + "_t1"), tag + "_c0"),
             inner(t, tag + "_c1"), inner(oneMinus, tag + "_c2"),
             outer(step("add", {oneMinus, c(1, "one_c")}, tag + "_t2"),
                   tag + "_c3")};
      }
      for (std::string &weight : w)
        if (dtype != f32)
          weight = castTo(weight, dtype, weight + "_cast");
      weights[d] = w;
    }
    // Sum over the taps from the last dim out, as the reference nests it.
    std::vector<std::string> taps(spatial);
    std::function<std::string(int64_t)> interpolate = [&](int64_t d) {
      std::string sum;
      for (int64_t k = 0; k < count; ++k) {
        taps[d] =
            k + first == 0
                ? below[d]
                : step("add",
                       {below[d], constant(i64, double(k + first),
                                           "dim" + std::to_string(d) + "_k" +
                                               std::to_string(k) + "_" +
                                               std::to_string(fetches))},
                       "dim" + std::to_string(d) + "_tap" + std::to_string(k) +
                           "_" + std::to_string(fetches));
        std::string value = d + 1 == spatial ? fetch(taps) : interpolate(d + 1);
        std::string term =
            step("mul", {weights[d][k], value},
                 "term" + std::to_string(d) + "_" + std::to_string(fetches) +
                     "_" + std::to_string(k));
        sum = sum.empty()
                  ? term
                  : step("add", {sum, term},
                         "sum" + std::to_string(d) + "_" +
                             std::to_string(fetches) + "_" + std::to_string(k));
      }
      return sum;
    };
    result = interpolate(0);
  }
  Shape resultShape = {batch, channels};
  resultShape.insert(resultShape.end(), outPoints.begin(), outPoints.end());
  becomeView(node, result, resultShape);
}

/// RotaryEmbedding (opset 23): the first rotary_embedding_dim values of
/// each head rotated in pairs (halves, or neighbours when interleaved) by
/// the cos and sin caches at each token's position, the rest as they are;
/// op by op in the input's dtype as ONNX's reference computes it.
void rotaryEmbedding(OnnxConverter &converter, const onnx::NodeProto &proto,
                     GraphNode &node) {
  if (node.inputs.size() < 3 || node.inputs[1].empty() ||
      node.inputs[2].empty())
    throw Unsupported{"RotaryEmbedding takes X, cos_cache and sin_cache"};
  const std::string x = node.inputs[0];
  std::string cosCache = node.inputs[1], sinCache = node.inputs[2];
  const std::string positions = node.inputs.size() > 3 ? node.inputs[3] : "";
  const std::string &opType = proto.op_type();
  const Shape shape = converter.requireShape(x, opType);
  const DType dtype = converter.requireDType(x, opType);
  if (!isFloat(dtype))
    throw Unsupported{opType + " takes floats"};
  // The input as [B, S, heads, head size].
  std::string tokens;
  Shape laid;
  if (shape.size() == 4) {
    tokens = converter.addStep(node, "transpose", {x}, "by_token",
                               {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    laid = {shape[0], shape[2], shape[1], shape[3]};
  } else if (shape.size() == 3) {
    int64_t heads = intAttr(node, "num_heads", 0);
    if (heads < 1 || shape[2] % heads != 0)
      throw Unsupported{"a 3-D input needs num_heads dividing its hidden "
                        "size " +
                        std::to_string(shape[2])};
    laid = {shape[0], shape[1], heads, shape[2] / heads};
    tokens = viewStep(converter, node, x, laid, "by_head");
  } else {
    throw Unsupported{opType + "'s input must be 3-D or 4-D"};
  }
  const int64_t headSize = laid[3];
  int64_t rotated = intAttr(node, "rotary_embedding_dim", 0);
  if (rotated == 0)
    rotated = headSize;
  if (rotated < 2 || rotated > headSize || rotated % 2 != 0)
    throw Unsupported{"rotary_embedding_dim must be even and at most the head "
                      "size " +
                      std::to_string(headSize)};
  const int64_t half = rotated / 2;
  const bool interleaved = intAttr(node, "interleaved", 0) != 0;
  // The caches at each token: [B, S, 1, half].
  auto atTokens = [&](std::string &cache, const std::string &suffix) {
    if (converter.requireDType(cache, opType) != dtype)
      throw Unsupported{"the caches must have the input's dtype"};
    if (!positions.empty())
      cache =
          converter.addStep(node, "gather", {cache, positions},
                            suffix + "_at_positions", {{"axis", int64_t(0)}});
    Shape cacheShape = positions.empty() ? converter.requireShape(cache, opType)
                                         : Shape{laid[0], laid[1], half};
    if (!positions.empty() &&
        converter.requireShape(positions, opType) != Shape{laid[0], laid[1]})
      throw Unsupported{"position_ids must be [batch, sequence]"};
    if (cacheShape != Shape{laid[0], laid[1], half})
      throw Unsupported{"the caches must give [" + std::to_string(laid[0]) +
                        ", " + std::to_string(laid[1]) + ", " +
                        std::to_string(half) + "] values"};
    cache = viewStep(converter, node, cache, {laid[0], laid[1], 1, half},
                     suffix + "_per_head");
  };
  atTokens(cosCache, "cos");
  atTokens(sinCache, "sin");
  auto lastDimSlice = [&](const std::string &value, int64_t start, int64_t end,
                          int64_t step, const std::string &suffix) {
    return converter.addStep(node, "slice", {value}, suffix,
                             {{"starts", std::vector<int64_t>{start}},
                              {"ends", std::vector<int64_t>{end}},
                              {"axes", std::vector<int64_t>{3}},
                              {"steps", std::vector<int64_t>{step}}});
  };
  std::string first = interleaved ? lastDimSlice(tokens, 0, rotated, 2, "first")
                                  : lastDimSlice(tokens, 0, half, 1, "first");
  std::string second = interleaved
                           ? lastDimSlice(tokens, 1, rotated, 2, "second")
                           : lastDimSlice(tokens, half, rotated, 1, "second");
  auto product = [&](const std::string &a, const std::string &b,
                     const std::string &suffix) {
    return converter.addStep(node, "mul", {a, b}, suffix);
  };
  std::string real =
      converter.addStep(node, "sub",
                        {product(cosCache, first, "cos_first"),
                         product(sinCache, second, "sin_second")},
                        "real");
  std::string imaginary =
      converter.addStep(node, "add",
                        {product(sinCache, first, "sin_first"),
                         product(cosCache, second, "cos_second")},
                        "imaginary");
  std::string result;
  if (interleaved) {
    Shape pairs = {laid[0], laid[1], laid[2], half, 1};
    std::string joined = converter.addStep(
        node, "concat",
        {viewStep(converter, node, real, pairs, "real_pairs"),
         viewStep(converter, node, imaginary, pairs, "imaginary_pairs")},
        "pairs", {{"axis", int64_t(4)}});
    result = viewStep(converter, node, joined,
                      {laid[0], laid[1], laid[2], rotated}, "rotated");
  } else {
    result = converter.addStep(node, "concat", {real, imaginary}, "rotated",
                               {{"axis", int64_t(3)}});
  }
  if (rotated < headSize)
    result = converter.addStep(
        node, "concat",
        {result, lastDimSlice(tokens, rotated, headSize, 1, "kept")},
        "embedded", {{"axis", int64_t(3)}});
  node.attrs.clear();
  if (shape.size() == 3) {
    becomeView(node, result, shape);
    return;
  }
  node.op = "transpose";
  node.inputs = {result};
  node.attrs = {{"perm", std::vector<int64_t>{0, 2, 1, 3}}};
}

/// CenterCropPad (opset 18): each listed axis cropped or zero-padded to its
/// target size about its center (the odd element off the end).
void centerCropPad(OnnxConverter &converter, const onnx::NodeProto &proto,
                   GraphNode &node) {
  const std::string x = node.inputs.at(0);
  const Shape shape = converter.requireShape(x, proto.op_type());
  const int64_t rank = shape.size();
  auto targetAttr = node.attrs.find("target_shape");
  if (targetAttr == node.attrs.end())
    throw Unsupported{"CenterCropPad needs its shape input"};
  const std::vector<int64_t> target =
      std::get<std::vector<int64_t>>(targetAttr->second);
  std::vector<int64_t> axes;
  if (auto it = node.attrs.find("axes"); it != node.attrs.end())
    for (int64_t axis : std::get<std::vector<int64_t>>(it->second))
      axes.push_back(resolvedAxis(axis, rank));
  else
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  if (target.size() != axes.size())
    throw Unsupported{"CenterCropPad's shape has " +
                      std::to_string(target.size()) + " sizes for " +
                      std::to_string(axes.size()) + " axes"};
  std::vector<int64_t> starts, ends, sliced, pads(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i], dim = shape[axis], size = target[i];
    if (size < 0)
      throw Unsupported{"CenterCropPad's sizes must not be negative"};
    if (size < dim) {
      starts.push_back((dim - size) / 2);
      ends.push_back((dim - size) / 2 + size);
      sliced.push_back(axis);
    } else {
      pads[axis] = (size - dim) / 2;
      pads[rank + axis] = size - dim - (size - dim) / 2;
    }
  }
  Shape result = shape;
  for (size_t i = 0; i < axes.size(); ++i)
    result[axes[i]] = target[i];
  converter.recordValue(node.outputs.at(0), result,
                        converter.requireDType(x, proto.op_type()));
  std::string value = x;
  if (!sliced.empty())
    value =
        converter.addStep(node, "slice", {x}, "cropped",
                          {{"starts", starts},
                           {"ends", ends},
                           {"axes", sliced},
                           {"steps", std::vector<int64_t>(sliced.size(), 1)}});
  node.op = "pad";
  node.inputs = {value};
  node.attrs = {{"pads", pads}, {"constant_value", 0.0}};
}

/// TensorScatter (opset 24): the update's sequence written into the cache
/// along `axis` from each batch's write index (wrapping around the cache
/// in circular mode). Each cache position searches the update positions
/// for the one written to it (work: cache length x update length per
/// row, as the scatters).
void tensorScatter(OnnxConverter &converter, const onnx::NodeProto &proto,
                   GraphNode &node) {
  if (node.inputs.size() < 2 || node.inputs[1].empty())
    throw Unsupported{"TensorScatter takes past_cache and update"};
  const std::string cache = node.inputs[0], update = node.inputs[1];
  const std::string writeIndices = node.inputs.size() > 2 ? node.inputs[2] : "";
  const std::string &opType = proto.op_type();
  const Shape shape = converter.requireShape(cache, opType),
              updateShape = converter.requireShape(update, opType);
  const DType dtype = converter.requireDType(cache, opType);
  const int64_t rank = shape.size();
  if (rank < 2 || static_cast<int64_t>(updateShape.size()) != rank)
    throw Unsupported{"past_cache and update must have one rank, 2 or more"};
  const int64_t axis = resolvedAxis(intAttr(node, "axis", -2), rank);
  if (axis == 0)
    throw Unsupported{"TensorScatter's axis cannot be the batch axis"};
  std::string mode = "linear";
  if (auto it = node.attrs.find("mode"); it != node.attrs.end())
    mode = std::get<std::string>(it->second);
  if (mode != "linear" && mode != "circular")
    throw Unsupported{"TensorScatter's mode must be linear or circular, not " +
                      mode};
  for (int64_t d = 0; d < rank; ++d)
    if (d == axis ? updateShape[d] > shape[d] : updateShape[d] != shape[d])
      throw Unsupported{"update [" + formatShape(updateShape) +
                        "] does not fit past_cache [" + formatShape(shape) +
                        "] along axis " + std::to_string(axis)};
  const int64_t length = shape[axis], written = updateShape[axis];
  if (length == 0 || written == 0) { // nothing is written
    becomeView(node, cache, shape);
    return;
  }
  // Positions: the cache's along `axis`, the update's along a dim after it.
  Shape spread = updateShape;
  spread[axis] = 1;
  spread.insert(spread.begin() + axis + 1, written);
  std::string updates = viewStep(converter, node, update, spread, "spread");
  std::string target = converter.addStepConstant(
      node, "update_positions", indicesAlong(rank + 1, axis + 1, written));
  if (!writeIndices.empty()) {
    if (converter.requireShape(writeIndices, opType) != Shape{shape[0]})
      throw Unsupported{"write_indices must be [" + std::to_string(shape[0]) +
                        "]"};
    Shape perBatch(rank + 1, 1);
    perBatch[0] = shape[0];
    std::string start =
        viewStep(converter, node, writeIndices, perBatch, "write_start");
    if (converter.requireDType(writeIndices, opType) != DType::I64)
      start = converter.addStep(node, "cast", {start}, "write_start_i64",
                                {{"dtype", std::string("i64")}});
    target = converter.addStep(node, "add", {start, target}, "targets");
  }
  if (mode == "circular")
    target = converter.addStep(
        node, "mod",
        {target, converter.addStepConstant(node, "cache_length",
                                           scalarTensor(DType::I64, length))},
        "targets_wrapped");
  std::string match = converter.addStep(
      node, "eq",
      {converter.addStepConstant(node, "cache_positions",
                                 indicesAlong(rank + 1, axis, length)),
       target},
      "match");
  std::map<std::string, AttrValue> overUpdates = {
      {"axes", std::vector<int64_t>{axis + 1}}, {"keepdims", int64_t(0)}};
  std::string picked = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(node, "select",
                         {match, updates,
                          converter.addStepConstant(
                              node, "nothing", scatterIdentity(dtype, "none"))},
                         "written_values")},
      "picked", overUpdates);
  std::string writes = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(
          node, "select",
          {match,
           converter.addStepConstant(node, "one", scalarTensor(DType::I64, 1)),
           converter.addStepConstant(node, "none",
                                     scalarTensor(DType::I64, 0))},
          "write_marks")},
      "writes", overUpdates);
  node.op = "select";
  node.inputs = {converter.addStep(node, "gt",
                                   {writes, converter.addStepConstant(
                                                node, "no_writes",
                                                scalarTensor(DType::I64, 0))},
                                   "written"),
                 picked, cache};
  node.attrs.clear();
}

/// TopK: each element's rank along `axis` is the number of elements that
/// come before it (larger, or for largest = 0 smaller, with NaN above
/// every number as NumPy sorts it; equal ones by lower index), and output
/// position r takes the element of rank r: the order of ONNX's reference,
/// whose sort is stable. Work: the axis' length squared per row (as the
/// scatters).
void topK(OnnxConverter &converter, const onnx::NodeProto &, GraphNode &node) {
  const std::string x = node.inputs.at(0);
  const Shape shape = converter.requireShape(x, "TopK");
  const DType dtype = converter.requireDType(x, "TopK");
  const int64_t rank = shape.size();
  if (rank == 0)
    throw Unsupported{"TopK's input must have a rank of 1 or more"};
  const int64_t axis = resolvedAxis(intAttr(node, "axis", -1), rank);
  int64_t k;
  if (converter.opset < 10) {
    k = intAttr(node, "k", -1);
  } else {
    if (node.inputs.size() < 2 || node.inputs[1].empty())
      throw Unsupported{"TopK needs its K input"};
    std::vector<int64_t> ks = integersOf(
        converter.constantValue(node.inputs[1], "TopK's K"), "TopK's K");
    if (ks.size() != 1)
      throw Unsupported{"TopK's K must be one integer"};
    k = ks[0];
  }
  const int64_t length = shape[axis];
  if (k < 0 || k > length)
    throw Unsupported{"TopK's K (" + std::to_string(k) + ") must be in [0, " +
                      std::to_string(length) + "]"};
  const bool largest = intAttr(node, "largest", 1) != 0;
  if (!isFloat(dtype) && !isInteger(dtype))
    throw Unsupported{std::string("TopK of ") + dtypeName(dtype) +
                      " is not supported"};
  checkConstantElements(length * std::max<int64_t>(length, k),
                        "TopK's comparisons per row");
  // Element i along `axis`, element j along a new dim after it.
  Shape alongI = shape, alongJ = shape;
  alongI.insert(alongI.begin() + axis + 1, 1);
  alongJ.insert(alongJ.begin() + axis, 1);
  const std::string xi = viewStep(converter, node, x, alongI, "as_i");
  const std::string xj = viewStep(converter, node, x, alongJ, "as_j");
  const std::string indexI = converter.addStepConstant(
      node, "index_i", indicesAlong(rank + 1, axis, length));
  const std::string indexJ = converter.addStepConstant(
      node, "index_j", indicesAlong(rank + 1, axis + 1, length));
  // j before i: j's value beyond i's (NaN beyond numbers), or equal and j
  // earlier.
  std::string beyond =
      converter.addStep(node, largest ? "gt" : "lt", {xj, xi}, "value_beyond");
  std::string same = converter.addStep(node, "eq", {xj, xi}, "value_same");
  if (isFloat(dtype)) {
    std::string nanI = converter.addStep(node, "isnan", {xi}, "nan_i");
    std::string nanJ = converter.addStep(node, "isnan", {xj}, "nan_j");
    // largest: a NaN j comes before a number i; smallest: a number j comes
    // before a NaN i.
    std::string nanOrder =
        largest
            ? converter.addStep(
                  node, "and",
                  {nanJ, converter.addStep(node, "not", {nanI}, "number_i")},
                  "nan_before_number")
            : converter.addStep(
                  node, "and",
                  {nanI, converter.addStep(node, "not", {nanJ}, "number_j")},
                  "number_before_nan");
    beyond = converter.addStep(node, "or", {beyond, nanOrder}, "order_beyond");
    same = converter.addStep(
        node, "or",
        {same, converter.addStep(node, "and", {nanI, nanJ}, "both_nan")},
        "order_same");
  }
  std::string before = converter.addStep(
      node, "or",
      {beyond,
       converter.addStep(node, "and",
                         {same, converter.addStep(node, "lt", {indexJ, indexI},
                                                  "index_earlier")},
                         "tie_earlier")},
      "comes_before");
  const std::string one =
      converter.addStepConstant(node, "one", scalarTensor(DType::I64, 1));
  const std::string zero =
      converter.addStepConstant(node, "zero", scalarTensor(DType::I64, 0));
  std::string ranks = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(node, "select", {before, one, zero}, "counted")},
      "ranks",
      {{"axes", std::vector<int64_t>{axis + 1}}, {"keepdims", int64_t(0)}});
  // Output position r (along a new dim after `axis`) takes rank r.
  std::string match = converter.addStep(
      node, "eq",
      {viewStep(converter, node, ranks, alongI, "ranks_as_i"),
       converter.addStepConstant(node, "positions",
                                 indicesAlong(rank + 1, axis + 1, k))},
      "at_position");
  std::map<std::string, AttrValue> overI = {
      {"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t(0)}};
  if (node.outputs.size() > 1 && !node.outputs[1].empty()) {
    std::string picked = converter.addStep(
        node, "select", {match, indexI, zero}, "index_picked");
    converter.addOutputStep(node, "reduce_sum", {picked}, node.outputs[1],
                            overI);
    Shape result = shape;
    result[axis] = k;
    converter.recordValue(node.outputs[1], result, DType::I64);
  }
  node.outputs.resize(1);
  node.op = "reduce_sum";
  node.inputs = {
      converter.addStep(node, "select",
                        {match, xi,
                         converter.addStepConstant(
                             node, "nothing", scatterIdentity(dtype, "none"))},
                        "value_picked")};
  node.attrs = overI;
}

/// sigmoid(alpha * x), Swish's gate (Swish is x times it; SiLU for alpha =
/// 1), in x's dtype op by op as ONNX's function computes it.
std::string swishGate(OnnxConverter &converter, const GraphNode &node,
                      const std::string &x, double alpha,
                      const std::string &suffix) {
  DType dtype = converter.requireDType(x, "Swish");
  if (!isFloat(dtype))
    throw Unsupported{std::string("Swish of ") + dtypeName(dtype) +
                      " is not supported (floats)"};
  std::string gate = x;
  if (alpha != 1.0)
    gate = converter.addStep(
        node, "mul",
        {converter.addStepConstant(node, suffix + "_alpha",
                                   scalarTensor(dtype, alpha)),
         x},
        suffix + "_scaled");
  return converter.addStep(node, "sigmoid", {gate}, suffix + "_sigmoid");
}

/// Swish (opset 24): x * sigmoid(alpha * x).
void swish(OnnxConverter &converter, const onnx::NodeProto &, GraphNode &node) {
  const std::string x = node.inputs.at(0);
  node.inputs = {x, swishGate(converter, node, x,
                              floatAttr(node, "alpha", 1.0f), "swish")};
  node.op = "mul";
  node.attrs.clear();
}

/// SwiGLU (opset 28): Swish_alpha(A) * B, A and B of one shape.
void swiGlu(OnnxConverter &converter, const onnx::NodeProto &,
            GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[1].empty())
    throw Unsupported{"SwiGLU takes A and B"};
  const std::string a = node.inputs[0], b = node.inputs[1];
  if (converter.requireShape(a, "SwiGLU") !=
      converter.requireShape(b, "SwiGLU"))
    throw Unsupported{"SwiGLU's A and B must have one shape (it does not "
                      "broadcast)"};
  std::string swished =
      converter.addStep(node, "mul",
                        {a, swishGate(converter, node, a,
                                      floatAttr(node, "alpha", 1.0f), "gate")},
                        "gate");
  node.inputs = {swished, b};
  node.op = "mul";
  node.attrs.clear();
}

/// RMSNormalization (opset 23): fusec's rms_norm, its scale required.
void rmsNormalization(OnnxConverter &, const onnx::NodeProto &proto,
                      GraphNode &node) {
  if (node.inputs.size() != 2 || node.inputs[1].empty())
    throw Unsupported{"RMSNormalization takes X and scale"};
  dropStashType(node, proto.op_type());
}

/// GroupNormalization (opset 18; per-channel scale and bias from 21, per
/// group before): each group of C / num_groups channels normalized over
/// its channels and spatial dims together (a layer_norm of the [N, G, rest]
/// view), then scaled and shifted per channel.
void groupNormalization(OnnxConverter &converter, const onnx::NodeProto &proto,
                        GraphNode &node) {
  if (node.inputs.size() != 3 || node.inputs[1].empty() ||
      node.inputs[2].empty())
    throw Unsupported{"GroupNormalization takes X, scale and bias"};
  dropStashType(node, proto.op_type());
  const std::string x = node.inputs[0], scale = node.inputs[1],
                    bias = node.inputs[2];
  Shape shape = converter.requireShape(x, proto.op_type());
  DType dtype = converter.requireDType(x, proto.op_type());
  auto groupsAttr = node.attrs.find("num_groups");
  if (groupsAttr == node.attrs.end())
    throw Unsupported{"GroupNormalization needs num_groups"};
  const int64_t groups = std::get<int64_t>(groupsAttr->second);
  if (shape.size() < 2)
    throw Unsupported{"GroupNormalization's input must be [N, C, ...], not [" +
                      formatShape(shape) + "]"};
  const int64_t channels = shape[1];
  if (groups < 1 || channels % groups != 0)
    throw Unsupported{"num_groups " + std::to_string(groups) +
                      " does not divide the " + std::to_string(channels) +
                      " channels"};
  const bool perGroup = converter.opset < 21;
  const int64_t parameterSize = perGroup ? groups : channels;
  for (const std::string &parameter : {scale, bias})
    if (converter.requireShape(parameter, proto.op_type()) !=
        Shape{parameterSize})
      throw Unsupported{std::string("scale and bias must be [") +
                        std::to_string(parameterSize) + "] (" +
                        (perGroup ? "one per group before opset 21"
                                  : "one per channel from opset 21") +
                        ")"};
  const double epsilon = floatAttr(node, "epsilon", 1e-5f);
  // Each group's channels and spatial positions.
  const int64_t rest =
      channels / groups * numElements(Shape(shape.begin() + 2, shape.end()));
  checkConstantElements(rest, "GroupNormalization's unit scale");
  Tensor ones(dtype, {rest});
  for (int64_t i = 0; i < rest; ++i)
    ones.set(i, 1.0);
  std::string grouped =
      viewStep(converter, node, x, {shape[0], groups, rest}, "grouped");
  std::string normalized = converter.addStep(
      node, "layer_norm",
      {grouped, converter.addStepConstant(node, "unit_scale", ones)},
      "normalized", {{"axis", int64_t(2)}, {"epsilon", epsilon}});
  Shape parameterShape(shape.size(), 1);
  parameterShape[1] = channels;
  auto perChannel = [&](const std::string &parameter,
                        const std::string &suffix) {
    if (!perGroup)
      return viewStep(converter, node, parameter, parameterShape, suffix);
    // One value per group: repeated over the group's channels.
    std::string column =
        viewStep(converter, node, parameter, {groups, 1}, suffix + "_groups");
    std::string repeated = converter.addStep(
        node, "expand", {column}, suffix + "_repeated",
        {{"shape", std::vector<int64_t>{groups, channels / groups}}});
    return viewStep(converter, node, repeated, parameterShape, suffix);
  };
  std::string scaled = converter.addStep(
      node, "mul",
      {viewStep(converter, node, normalized, shape, "normalized_view"),
       perChannel(scale, "scale_column")},
      "scaled");
  node.op = "add";
  node.inputs = {scaled, perChannel(bias, "bias_column")};
  node.attrs.clear();
}

/// ReduceMax and ReduceMin of booleans (opset 20): of their u8 values.
void booleanExtremes(OnnxConverter &converter, const onnx::NodeProto &proto,
                     GraphNode &node) {
  if (converter.requireDType(node.inputs.at(0), proto.op_type()) != DType::I1)
    return;
  std::string bytes = converter.addStep(node, "cast", {node.inputs[0]}, "bytes",
                                        {{"dtype", std::string("u8")}});
  std::vector<std::string> inputs = node.inputs;
  inputs[0] = bytes;
  std::string reduced =
      converter.addStep(node, node.op, inputs, "reduced", node.attrs);
  node.op = "cast";
  node.inputs = {reduced};
  node.attrs = {{"dtype", std::string("i1")}};
}

/// The convolution of `padded` ([N, C, spatial...], padded already) with
/// `weights` ([M, C / group, kernel...]) by `windows` (whose pads are
/// already in `padded`) as one matmul: the weights, as [group, M / group,
/// C / group * taps], times every window's elements side by side (im2col:
/// [N, group, C / group * taps, positions], one gather from the padded
/// input by a table of [taps, positions] offsets; a 1x1 kernel at stride 1
/// takes the input as it is). `node` becomes the result, plus `bias` ([M])
/// if given.
void convolveByWindows(OnnxConverter &converter, GraphNode &node,
                       const std::string &padded, const Shape &paddedShape,
                       const std::string &weights, const Shape &weightShape,
                       int64_t group, const SlidingWindows &windows,
                       const std::string &bias) {
  const int64_t spatial = static_cast<int64_t>(paddedShape.size()) - 2;
  const int64_t batch = paddedShape[0], channels = paddedShape[1],
                outChannels = weightShape[0];
  int64_t positions = 1, area = 1;
  bool pointwise = true;
  for (int64_t i = 0; i < spatial; ++i) {
    positions *= windows.out[i];
    area *= paddedShape[2 + i];
    pointwise &= windows.kernel[i] == 1 && windows.strides[i] == 1 &&
                 windows.out[i] == paddedShape[2 + i];
  }
  std::string columns =
      viewStep(converter, node, padded, {batch, channels, area}, "flat_input");
  if (!pointwise) {
    if (windows.taps * positions > (int64_t(1) << 26))
      throw Unsupported{std::to_string(windows.taps) + " taps over " +
                        std::to_string(positions) +
                        " output positions are more window elements than "
                        "fusec takes (2^26)"};
    // offset[tap][position]: the tap's element of the position's window in
    // the flattened padded input (int32 where that suffices).
    Tensor offsets(area <= INT32_MAX ? DType::I32 : DType::I64,
                   {windows.taps, positions});
    std::vector<int64_t> tap(spatial), at(spatial);
    for (int64_t t = 0; t < windows.taps; ++t) {
      for (int64_t i = spatial, rest = t; i-- > 0; rest /= windows.kernel[i])
        tap[i] = rest % windows.kernel[i];
      for (int64_t p = 0; p < positions; ++p) {
        int64_t offset = 0;
        for (int64_t i = spatial, rest = p; i-- > 0; rest /= windows.out[i])
          at[i] = rest % windows.out[i];
        for (int64_t i = 0; i < spatial; ++i)
          offset = offset * paddedShape[2 + i] + at[i] * windows.strides[i] +
                   tap[i] * windows.dilations[i];
        offsets.set(t * positions + p, static_cast<double>(offset));
      }
    }
    columns = converter.addStep(
        node, "gather",
        {columns, converter.addStepConstant(node, "window_offsets", offsets)},
        "windows", {{"axis", int64_t(2)}});
  }
  // A 2-D lhs is one matmul for the whole batch; a grouped one is a batch
  // of group matmuls per image (its lhs broadcast over the images).
  const int64_t depth = channels / group * windows.taps;
  Shape columnShape = {batch, group, depth, positions},
        weightRows = {group, outChannels / group, depth};
  if (group == 1) {
    columnShape.erase(columnShape.begin() + 1);
    weightRows.erase(weightRows.begin());
  } else if (batch == 1) {
    columnShape.erase(columnShape.begin());
  }
  std::string product = converter.addStep(
      node, "matmul",
      {viewStep(converter, node, weights, weightRows, "weight_rows"),
       viewStep(converter, node, columns, columnShape, "columns")},
      "product");
  Shape result = {batch, outChannels};
  result.insert(result.end(), windows.out.begin(), windows.out.end());
  if (bias.empty()) {
    becomeView(node, product, result);
    return;
  }
  Shape biasShape(paddedShape.size(), 1);
  biasShape[1] = outChannels;
  node.op = "add";
  node.inputs = {viewStep(converter, node, product, result, "unbiased"),
                 viewStep(converter, node, bias, biasShape, "bias_column")};
  node.attrs.clear();
}

/// The operands of Conv and ConvTranspose, checked: X [N, C, d1, ...], W,
/// an optional B [M], and the group.
struct ConvOperands {
  std::string x, w, bias;
  Shape xShape, wShape;
  int64_t group = 1, spatial = 0;
};

ConvOperands convOperands(OnnxConverter &converter,
                          const onnx::NodeProto &proto, const GraphNode &node) {
  ConvOperands c;
  const std::string &op = proto.op_type();
  c.x = node.inputs.at(0);
  c.w = node.inputs.size() > 1 ? node.inputs[1] : "";
  if (c.w.empty())
    throw Unsupported{op + " needs its weights (input 1)"};
  if (node.inputs.size() > 2)
    c.bias = node.inputs[2];
  c.xShape = converter.requireShape(c.x, op);
  c.wShape = converter.requireShape(c.w, op);
  DType dtype = converter.requireDType(c.x, op);
  // ConvInteger and QLinearConv convolve their operands shifted to i32.
  const bool shifted = op == "ConvInteger" || op == "QLinearConv";
  if (shifted ? dtype != DType::I32 : !isFloat(dtype))
    throw Unsupported{op + " takes floats, not " + dtypeName(dtype)};
  c.spatial = static_cast<int64_t>(c.xShape.size()) - 2;
  if (c.spatial < 1)
    throw Unsupported{op + "'s input must be [N, C, d1, ...], not [" +
                      formatShape(c.xShape) + "]"};
  if (c.wShape.size() != c.xShape.size())
    throw Unsupported{op + "'s weights [" + formatShape(c.wShape) +
                      "] must have the input's rank (" +
                      std::to_string(c.xShape.size()) + ")"};
  if (auto it = node.attrs.find("group"); it != node.attrs.end())
    c.group = std::get<int64_t>(it->second);
  const int64_t channels = c.xShape[1];
  if (c.group < 1 || channels % c.group != 0)
    throw Unsupported{"group " + std::to_string(c.group) +
                      " must be positive and divide the input's " +
                      std::to_string(channels) + " channels"};
  if (auto it = node.attrs.find("kernel_shape"); it != node.attrs.end()) {
    auto kernel = std::get<std::vector<int64_t>>(it->second);
    if (kernel != std::vector<int64_t>(c.wShape.begin() + 2, c.wShape.end()))
      throw Unsupported{"kernel_shape disagrees with the weights [" +
                        formatShape(c.wShape) + "]"};
  }
  return c;
}

std::vector<int64_t> kernelOf(const Shape &weightShape) {
  return std::vector<int64_t>(weightShape.begin() + 2, weightShape.end());
}

void checkBias(OnnxConverter &converter, const ConvOperands &c,
               int64_t outChannels) {
  if (c.bias.empty())
    return;
  Shape shape = converter.requireShape(c.bias, "the bias");
  if (shape != Shape{outChannels})
    throw Unsupported{"the bias must be [" + std::to_string(outChannels) +
                      "], not [" + formatShape(shape) + "]"};
}

/// Conv: the input padded with zeros, then convolveByWindows.
void convolution(OnnxConverter &converter, const onnx::NodeProto &proto,
                 GraphNode &node) {
  ConvOperands c = convOperands(converter, proto, node);
  const int64_t outChannels = c.wShape[0];
  if (c.wShape[1] * c.group != c.xShape[1] || outChannels % c.group != 0)
    throw Unsupported{"weights [" + formatShape(c.wShape) + "] do not fit " +
                      std::to_string(c.xShape[1]) + " input channels in " +
                      std::to_string(c.group) + " group(s)"};
  checkBias(converter, c, outChannels);
  SlidingWindows windows =
      slidingWindows(node, c.xShape, kernelOf(c.wShape), false);
  const int64_t rank = c.xShape.size();
  std::vector<int64_t> pads(2 * rank, 0);
  Shape paddedShape = c.xShape;
  bool padding = false;
  for (int64_t i = 0; i < c.spatial; ++i) {
    pads[2 + i] = windows.padBefore[i];
    pads[rank + 2 + i] = windows.padAfter[i];
    paddedShape[2 + i] += windows.padBefore[i] + windows.padAfter[i];
    padding |= windows.padBefore[i] != 0 || windows.padAfter[i] != 0;
  }
  std::string padded =
      padding ? converter.addStep(node, "pad", {c.x}, "padded",
                                  {{"pads", pads}, {"constant_value", 0.0}})
              : c.x;
  convolveByWindows(converter, node, padded, paddedShape, c.w, c.wShape,
                    c.group, windows, c.bias);
}

/// The integer ops' operand minus its zero point, in i32 (recorded for the
/// converters after it). A zero point of one value per row (`perRow`: dim
/// rank - 2 of a matmul's lhs) or per output channel (dim 0 of a Conv's
/// weights) is laid along that dim.
std::string shiftedToInt32(OnnxConverter &converter, GraphNode &node,
                           const std::string &value,
                           const std::string &zeroPoint, int64_t alongDim,
                           const std::string &suffix) {
  Shape shape = converter.requireShape(value, "a quantized operand");
  DType dtype = converter.requireDType(value, "a quantized operand");
  if (dtype != DType::I8 && dtype != DType::U8)
    throw Unsupported{"quantized operands must be i8 or u8, not " +
                      std::string(dtypeName(dtype))};
  auto asInt32 = [&](const std::string &name, const std::string &step) {
    return converter.addStep(node, "cast", {name}, step,
                             {{"dtype", std::string("i32")}});
  };
  std::string shifted = asInt32(value, suffix + "_i32");
  if (!zeroPoint.empty()) {
    Shape zeroShape = converter.requireShape(zeroPoint, "a zero point");
    std::string zero = asInt32(zeroPoint, suffix + "_zero_i32");
    int64_t count = numElements(zeroShape);
    // A 1-D zero point of several values is laid along its dim; one of
    // higher rank ([..., M, 1] per row) broadcasts as it is.
    if (count > 1 && zeroShape.size() == 1) {
      if (alongDim < 0 || alongDim >= static_cast<int64_t>(shape.size()) ||
          count != shape[alongDim])
        throw Unsupported{"a 1-D zero point of " + std::to_string(count) +
                          " values must have one per row or channel"};
      Shape laid(shape.size() - alongDim, 1);
      laid[0] = count;
      zero = viewStep(converter, node, zero, laid, suffix + "_zero_laid");
    }
    shifted =
        converter.addStep(node, "sub", {shifted, zero}, suffix + "_shifted");
  }
  converter.recordValue(shifted, shape, DType::I32);
  return shifted;
}

/// The requantization of QLinearMatMul and QLinearConv, as ONNX's reference
/// computes it: the i32 product times the multiplier x_scale * w_scale /
/// y_scale (rounded in f32, op by op), plus y's zero point, in f64,
/// rounded half to even and saturated to y's dtype. `scaleShape` lays a
/// per-channel w_scale along the product's channel dim.
void requantize(OnnxConverter &converter, GraphNode &node,
                const std::string &product, const std::string &inputScale,
                const std::string &weightScale, const Shape &weightScaleShape,
                const std::string &outputScale,
                const std::string &outputZeroPoint, DType outputType) {
  std::string scale = weightScale;
  if (numElements(converter.requireShape(weightScale, "w_scale")) > 1)
    scale = viewStep(converter, node, weightScale, weightScaleShape,
                     "w_scale_laid");
  std::string multiplier = converter.addStep(
      node, "div",
      {converter.addStep(node, "mul", {inputScale, scale}, "scales"),
       outputScale},
      "multiplier");
  auto inF64 = [&](const std::string &name, const std::string &step) {
    return converter.addStep(node, "cast", {name}, step,
                             {{"dtype", std::string("f64")}});
  };
  std::string real = converter.addStep(
      node, "mul",
      {inF64(product, "product_f64"), inF64(multiplier, "multiplier_f64")},
      "real");
  if (!outputZeroPoint.empty())
    real = converter.addStep(node, "add",
                             {real, inF64(outputZeroPoint, "y_zero_f64")},
                             "real_shifted");
  node.op = "cast";
  node.inputs = {converter.addStep(node, "round", {real}, "rounded")};
  node.attrs = {{"dtype", std::string(dtypeName(outputType))}};
}

/// MatMulInteger and QLinearMatMul: the operands minus their zero points in
/// i32 (a's per row, b's per column), multiplied as integers (wrapping, as
/// NumPy's int32 matmul); QLinearMatMul then requantizes.
void integerMatmul(OnnxConverter &converter, const onnx::NodeProto &proto,
                   GraphNode &node) {
  const bool requantized = proto.op_type() == "QLinearMatMul";
  std::vector<std::string> in = node.inputs;
  in.resize(8);
  // MatMulInteger: a, b, a_zero, b_zero; QLinearMatMul: a, a_scale,
  // a_zero, b, b_scale, b_zero, y_scale, y_zero.
  const std::string a = in[0], b = requantized ? in[3] : in[1], aZero = in[2],
                    bZero = requantized ? in[5] : in[3];
  if (a.empty() || b.empty() ||
      (requantized && (in[1].empty() || in[4].empty() || in[6].empty())))
    throw Unsupported{proto.op_type() + " is missing a required input"};
  Shape aShape = converter.requireShape(a, proto.op_type());
  Shape bShape = converter.requireShape(b, proto.op_type());
  std::string lhs = shiftedToInt32(
      converter, node, a, aZero, static_cast<int64_t>(aShape.size()) - 2, "a");
  std::string rhs = shiftedToInt32(
      converter, node, b, bZero, static_cast<int64_t>(bShape.size()) - 1, "b");
  if (!requantized) {
    node.op = "matmul";
    node.inputs = {lhs, rhs};
    node.attrs.clear();
    return;
  }
  std::string product =
      converter.addStep(node, "matmul", {lhs, rhs}, "product");
  DType outputType = in[7].empty() ? converter.requireDType(a, "a")
                                   : converter.requireDType(in[7], "y_zero");
  std::string aScale = in[1];
  if (numElements(converter.requireShape(aScale, "a_scale")) > 1) {
    Shape rows = {aShape.size() >= 2 ? aShape[aShape.size() - 2] : 1, 1};
    aScale = viewStep(converter, node, aScale, rows, "a_scale_rows");
  }
  // b's scale per column broadcasts along the product's last dim as it is.
  requantize(converter, node, product, aScale, in[4],
             converter.requireShape(in[4], "b_scale"), in[6], in[7],
             outputType);
}

/// ConvInteger and QLinearConv: x and w minus their zero points in i32 (w's
/// per output channel), convolved as integers (padding with 0 there is
/// padding with x's zero point), plus QLinearConv's i32 bias, and
/// QLinearConv requantizes.
void integerConvolution(OnnxConverter &converter, const onnx::NodeProto &proto,
                        GraphNode &node) {
  const bool requantized = proto.op_type() == "QLinearConv";
  std::vector<std::string> in = node.inputs;
  in.resize(9);
  // ConvInteger: x, w, x_zero, w_zero; QLinearConv: x, x_scale, x_zero, w,
  // w_scale, w_zero, y_scale, y_zero, B.
  const std::string x = in[0], w = requantized ? in[3] : in[1], xZero = in[2],
                    wZero = requantized ? in[5] : in[3];
  if (x.empty() || w.empty() ||
      (requantized && (in[1].empty() || in[4].empty() || in[6].empty())))
    throw Unsupported{proto.op_type() + " is missing a required input"};
  std::string shiftedX = shiftedToInt32(converter, node, x, xZero, 1, "x");
  std::string shiftedW = shiftedToInt32(converter, node, w, wZero, 0, "w");
  node.inputs = {shiftedX, shiftedW};
  if (requantized && !in[8].empty())
    node.inputs.push_back(in[8]);
  const DType outputType = in[7].empty()
                               ? converter.requireDType(x, proto.op_type())
                               : converter.requireDType(in[7], proto.op_type());
  convolution(converter, proto, node);
  if (!requantized)
    return;
  // The convolution's result becomes a step; the node requantizes it.
  Shape xShape = converter.requireShape(x, "x");
  Shape channels(xShape.size() - 1, 1);
  channels[0] = converter.requireShape(w, "w")[0];
  std::string product =
      converter.addStep(node, node.op, node.inputs, "accumulated", node.attrs);
  requantize(converter, node, product, in[1], in[4], channels, in[6], in[7],
             outputType);
}

/// Python's floor division, for pads that may be negative.
int64_t floorDiv(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/// ConvTranspose as the convolution it is the transpose of: the input with
/// stride - 1 zeros between its elements, padded by (kernel - 1) *
/// dilation less the pads (negative pads crop), convolved at stride 1 with
/// the weights flipped in every spatial dim and their channel dims swapped
/// within each group. output_shape, when given, sets the pads (auto_pad
/// SAME_UPPER puts the extra one at the end, otherwise at the start).
void transposedConvolution(OnnxConverter &converter,
                           const onnx::NodeProto &proto, GraphNode &node) {
  ConvOperands c = convOperands(converter, proto, node);
  const int64_t spatial = c.spatial, rank = c.xShape.size(), group = c.group;
  const int64_t channels = c.xShape[1], outChannels = c.wShape[1] * group;
  if (c.wShape[0] != channels)
    throw Unsupported{"weights [" + formatShape(c.wShape) +
                      "] must have the input's " + std::to_string(channels) +
                      " channels first"};
  checkBias(converter, c, outChannels);
  const std::vector<int64_t> kernel = kernelOf(c.wShape);
  std::vector<int64_t> strides = spatialInts(node, "strides", 1, spatial),
                       dilations = spatialInts(node, "dilations", 1, spatial),
                       extra = spatialInts(node, "output_padding", 0, spatial),
                       pads = spatialInts(node, "pads", 0, 2 * spatial);
  std::vector<int64_t> padLike = pads;
  padLike.insert(padLike.end(), extra.begin(), extra.end());
  const int64_t taps = checkedTaps(kernel, strides, dilations, padLike);
  const std::string autoPad = autoPadOf(node);
  if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER" && autoPad != "VALID")
    throw Unsupported{"auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or "
                      "VALID, not " +
                      autoPad};
  std::vector<int64_t> outputShape;
  if (auto it = node.attrs.find("output_shape"); it != node.attrs.end()) {
    outputShape = std::get<std::vector<int64_t>>(it->second);
    // The full N, C, d1, ... form is accepted too.
    if (static_cast<int64_t>(outputShape.size()) == rank)
      outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
    if (static_cast<int64_t>(outputShape.size()) != spatial)
      throw Unsupported{"output_shape must have " + std::to_string(spatial) +
                        " values"};
    for (int64_t d : outputShape)
      if (d < 0 || d > (int64_t(1) << 40))
        throw Unsupported{"output_shape values must be in [0, 2^40]"};
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < spatial; ++i)
      outputShape.push_back(c.xShape[2 + i] * strides[i]);
  }
  if (autoPad == "VALID")
    std::fill(pads.begin(), pads.end(), 0);
  const bool upperExtra = autoPad == "SAME_UPPER";
  // The zero-stuffed input, padded: pad begin (kernel - 1) * dilation -
  // pads_begin; its end as far as the output reaches.
  Shape stuffedShape = c.xShape;
  std::vector<int64_t> convPads(2 * rank, 0);
  SlidingWindows windows;
  windows.kernel = kernel;
  windows.dilations = dilations;
  windows.strides.assign(spatial, 1);
  windows.taps = taps;
  windows.padBefore.assign(spatial, 0);
  windows.padAfter.assign(spatial, 0);
  Shape paddedShape = c.xShape;
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t in = c.xShape[2 + i], window = (kernel[i] - 1) * dilations[i];
    const int64_t full = strides[i] * (in - 1) + extra[i] + window + 1;
    int64_t begin = pads[i], end = pads[i + spatial];
    if (!outputShape.empty()) {
      int64_t total = full - outputShape[i];
      begin = upperExtra ? floorDiv(total, 2) : total - floorDiv(total, 2);
      end = total - begin;
    }
    int64_t out = full - begin - end;
    if (out < 0)
      throw Unsupported{"the pads remove more than the whole output"};
    windows.out.push_back(out);
    stuffedShape[2 + i] = in > 0 ? (in - 1) * strides[i] + 1 : 0;
    convPads[2 + i] = window - begin;
    convPads[rank + 2 + i] =
        out + window - convPads[2 + i] - stuffedShape[2 + i];
    paddedShape[2 + i] = out + window;
  }
  // Zero stuffing: [N, C, d1, 1, d2, 1, ...] padded to stride at each unit
  // dim's end, viewed as [N, C, d1 * s1, ...], the last s - 1 zeros cut.
  std::string input = c.x;
  bool stuffing = false;
  for (int64_t s : strides)
    stuffing |= s > 1;
  if (stuffing) {
    Shape interleaved = {c.xShape[0], channels};
    std::vector<int64_t> stuffPads(2 * (2 + 2 * spatial), 0);
    Shape widened = {c.xShape[0], channels};
    for (int64_t i = 0; i < spatial; ++i) {
      interleaved.push_back(c.xShape[2 + i]);
      interleaved.push_back(1);
      stuffPads[(2 + 2 * spatial) + 3 + 2 * i] = strides[i] - 1;
      widened.push_back(c.xShape[2 + i] * strides[i]);
    }
    std::string spread = converter.addStep(
        node, "pad",
        {viewStep(converter, node, c.x, interleaved, "interleaved")},
        "stuffed_wide", {{"pads", stuffPads}, {"constant_value", 0.0}});
    input = viewStep(converter, node, spread, widened, "stuffed_rows");
    // The s - 1 zeros after the last element are cut by the end pad.
    for (int64_t i = 0; i < spatial; ++i)
      if (c.xShape[2 + i] > 0)
        convPads[rank + 2 + i] -= strides[i] - 1;
  }
  bool padding = false;
  for (int64_t p : convPads)
    padding |= p != 0;
  std::string padded =
      padding ? converter.addStep(node, "pad", {input}, "padded",
                                  {{"pads", convPads}, {"constant_value", 0.0}})
              : input;
  // The convolution's weights: [C, M/g, k...] as [g, C/g, M/g, k...],
  // swapped to [g, M/g, C/g, k...] = [M, C/g, k...] and flipped in every
  // spatial dim. Constant weights are rearranged here, once.
  const int64_t inPerGroup = channels / group, outPerGroup = c.wShape[1];
  Shape convWeightShape = {outChannels, inPerGroup};
  convWeightShape.insert(convWeightShape.end(), kernel.begin(), kernel.end());
  std::string weights;
  if (const Tensor *given = converter.constantOrNull(c.w)) {
    Tensor rearranged(given->dtype, convWeightShape);
    const size_t bytes = dtypeBytes(given->dtype);
    for (int64_t from = 0; from < given->numElements(); ++from) {
      // from = ((g * C/g + ci) * M/g + mo) * taps + tap
      int64_t tap = from % taps, rest = from / taps;
      int64_t mo = rest % outPerGroup, ci = (rest / outPerGroup) % inPerGroup,
              g = rest / outPerGroup / inPerGroup;
      int64_t to = ((g * outPerGroup + mo) * inPerGroup + ci) * taps +
                   (taps - 1 - tap); // flipping every dim reverses the taps
      std::memcpy(rearranged.bytes.data() + to * bytes,
                  given->bytes.data() + from * bytes, bytes);
    }
    weights = converter.addStepConstant(node, "conv_weights", rearranged);
  } else {
    Shape grouped = {group, inPerGroup, outPerGroup};
    grouped.insert(grouped.end(), kernel.begin(), kernel.end());
    std::vector<int64_t> swap = {0, 2, 1};
    for (int64_t i = 0; i < spatial; ++i)
      swap.push_back(3 + i);
    std::string swapped = converter.addStep(
        node, "transpose",
        {viewStep(converter, node, c.w, grouped, "weights_grouped")},
        "weights_swapped", {{"perm", swap}});
    std::vector<int64_t> starts(spatial, -1), ends(spatial, INT64_MIN),
        axes(spatial), steps(spatial, -1);
    std::iota(axes.begin(), axes.end(), int64_t(2));
    weights = converter.addStep(
        node, "slice",
        {viewStep(converter, node, swapped, convWeightShape,
                  "weights_as_conv")},
        "conv_weights",
        {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}});
  }
  convolveByWindows(converter, node, padded, paddedShape, weights,
                    convWeightShape, group, windows, c.bias);
}

const std::vector<OnnxOp> &onnxOps() {
  static const std::vector<OnnxOp> ops = [] {
    std::vector<OnnxOp> table;
    // Elementwise ops with the same meaning and no attributes; the first
    // opset that defines each, where later than 11 (ONNX's registry says
    // which older opsets define the others). Mish and the Bitwise
    // ops come with opset 18, past what fusec reads: a model fusec accepts
    // cannot use them (the JSON and MLIR inputs can).
    struct Elementwise {
      const char *onnxName, *graphOp;
      int64_t sinceOpset = kOldestOpset;
    };
    const Elementwise elementwise[] = {{"Add", "add"},
                                       {"Sub", "sub"},
                                       {"Mul", "mul"},
                                       {"Div", "div"},
                                       {"Neg", "neg"},
                                       {"Abs", "abs"},
                                       {"Exp", "exp"},
                                       {"Log", "log"},
                                       {"Sin", "sin"},
                                       {"Cos", "cos"},
                                       {"Tanh", "tanh"},
                                       {"Sigmoid", "sigmoid"},
                                       {"Relu", "relu"},
                                       {"Sqrt", "sqrt"},
                                       {"Reciprocal", "reciprocal"},
                                       {"Erf", "erf"},
                                       {"Floor", "floor"},
                                       {"Ceil", "ceil"},
                                       {"Not", "not"},
                                       {"And", "and"},
                                       {"Or", "or"},
                                       {"Equal", "eq"},
                                       {"Less", "lt"},
                                       {"LessOrEqual", "le", 12},
                                       {"Greater", "gt"},
                                       {"GreaterOrEqual", "ge", 12},
                                       {"Where", "select"},
                                       {"Tan", "tan"},
                                       {"Asin", "asin"},
                                       {"Acos", "acos"},
                                       {"Atan", "atan"},
                                       {"Sinh", "sinh"},
                                       {"Cosh", "cosh"},
                                       {"Asinh", "asinh"},
                                       {"Acosh", "acosh"},
                                       {"Atanh", "atanh"},
                                       {"Round", "round"},
                                       {"Sign", "sign"},
                                       {"IsNaN", "isnan"},
                                       {"Softplus", "softplus"},
                                       {"Softsign", "softsign"},
                                       {"Mish", "mish", 18},
                                       {"HardSwish", "hard_swish", 14},
                                       {"Xor", "xor"},
                                       {"BitwiseAnd", "bitwise_and", 18},
                                       {"BitwiseOr", "bitwise_or", 18},
                                       {"BitwiseXor", "bitwise_xor", 18},
                                       {"BitwiseNot", "bitwise_not", 18}};
    for (const Elementwise &op : elementwise)
      table.push_back(
          {op.onnxName, op.graphOp, {}, {}, nullptr, op.sinceOpset});
    // Clip: min and max are optional inputs (opset 11 on) or attributes
    // (opsets 6-10).
    table.push_back({"Clip", "clip", {"min", "max"}, {}, clipBounds});
    // Max, Min and Sum take one or more inputs (convertNode chains them).
    table.push_back({"Max", "max", {}, {}, nullptr});
    table.push_back({"Min", "min", {}, {}, nullptr});
    table.push_back({"Sum", "add", {}, {}, nullptr});
    table.push_back(
        {"Cast", "cast", {"to", "saturate", "round_mode"}, {}, castTarget});
    table.push_back({"BitCast", "bitcast", {"to"}, {}, bitcastTarget, 26});
    // Mod: fmod=0 takes the divisor's sign (mod), fmod=1 the dividend's.
    table.push_back({"Mod", "mod", {"fmod"}, {}, modKind});
    table.push_back(
        {"BitShift", "shift_left", {"direction"}, {}, bitShiftDirection});
    // Activations with float attributes (composite ops) and IsInf.
    table.push_back({"LeakyRelu", "leaky_relu", {"alpha"}, {}, nullptr});
    table.push_back({"Elu", "elu", {"alpha"}, {}, nullptr});
    table.push_back({"Selu", "selu", {"alpha", "gamma"}, {}, nullptr});
    table.push_back({"Celu", "celu", {"alpha"}, {}, nullptr, 12});
    table.push_back(
        {"HardSigmoid", "hard_sigmoid", {"alpha", "beta"}, {}, nullptr});
    table.push_back({"Shrink", "shrink", {"bias", "lambd"}, {}, nullptr});
    table.push_back({"IsInf",
                     "isinf",
                     {"detect_positive", "detect_negative"},
                     {},
                     nullptr});
    table.push_back({"MatMul", "matmul", {}, {}, nullptr});
    table.push_back(
        {"Gemm", "gemm", {"alpha", "beta", "transA", "transB"}, {}, nullptr});
    table.push_back(
        {"Softmax", "softmax", {"axis"}, {}, coerceTo2DBeforeOpset13});
    table.push_back(
        {"LogSoftmax", "log_softmax", {"axis"}, {}, coerceTo2DBeforeOpset13});
    table.push_back({"LayerNormalization",
                     "layer_norm",
                     {"axis", "epsilon", "stash_type"},
                     {},
                     layerNormOutputs,
                     17});
    table.push_back({"RMSNormalization",
                     "rms_norm",
                     {"axis", "epsilon", "stash_type"},
                     {},
                     rmsNormalization,
                     23});
    table.push_back({"GroupNormalization",
                     "add",
                     {"epsilon", "num_groups", "stash_type"},
                     {},
                     groupNormalization,
                     18});
    table.push_back({"Gelu", "gelu", {"approximate"}, {}, nullptr, 20});
    table.push_back(
        {"DFT", "reshape", {"axis", "inverse", "onesided"}, {}, dft, 17});
    table.push_back(
        {"STFT", "reshape", {"onesided"}, {}, shortTimeFourier, 17});
    for (const char *recurrent : {"RNN", "GRU", "LSTM"})
      table.push_back({recurrent,
                       "reshape",
                       {"activation_alpha", "activation_beta", "activations",
                        "clip", "direction", "hidden_size", "input_forget",
                        "layout", "linear_before_reset"},
                       {},
                       recurrentLayer,
                       7});
    table.push_back({"GridSample",
                     "reshape",
                     {"align_corners", "mode", "padding_mode"},
                     {},
                     gridSample,
                     16});
    table.push_back(
        {"TopK", "reduce_sum", {"axis", "k", "largest", "sorted"}, {}, topK});
    table.push_back({"CenterCropPad",
                     "pad",
                     {"axes"},
                     {{1, "target_shape"}},
                     centerCropPad,
                     18});
    table.push_back(
        {"TensorScatter", "select", {"axis", "mode"}, {}, tensorScatter, 24});
    table.push_back({"RotaryEmbedding",
                     "transpose",
                     {"interleaved", "num_heads", "rotary_embedding_dim"},
                     {},
                     rotaryEmbedding,
                     23});
    table.push_back(
        {"Attention",
         "matmul",
         {"is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode",
          "scale", "softcap", "softmax_precision", "left_window_size",
          "right_window_size"},
         {},
         attention,
         23});
    table.push_back({"Swish", "mul", {"alpha"}, {}, swish, 24});
    table.push_back({"SwiGLU", "mul", {"alpha"}, {}, swiGlu, 28});
    table.push_back({"Transpose", "transpose", {"perm"}, {}, nullptr});
    table.push_back({"Reshape",
                     "reshape",
                     {"allowzero"},
                     {{1, "shape"}},
                     recordReshapeResult});
    table.push_back({"Flatten", "flatten", {"axis"}, {}, nullptr});
    table.push_back({"Squeeze", "squeeze", {"axes"}, {{1, "axes", 13}}});
    table.push_back({"Unsqueeze", "unsqueeze", {"axes"}, {{1, "axes", 13}}});
    table.push_back({"Concat", "concat", {"axis"}, {}, nullptr});
    table.push_back({"Gather", "gather", {"axis"}, {}, nullptr});
    table.push_back(
        {"GatherElements", "gather", {"axis"}, {}, gatherElementsFlat});
    table.push_back(
        {"AffineGrid", "reshape", {"align_corners"}, {}, affineGrid, 20});
    table.push_back({"ReverseSequence",
                     "gather",
                     {"batch_axis", "time_axis"},
                     {},
                     reverseSequence,
                     10});
    table.push_back(
        {"QuantizeLinear",
         "cast",
         {"axis", "saturate", "block_size", "output_dtype", "precision"},
         {},
         quantizeLinear,
         10});
    table.push_back({"OneHot", "select", {"axis"}, {}, oneHotSelect});
    table.push_back({"MaxPool",
                     "max",
                     {"kernel_shape", "strides", "pads", "dilations",
                      "ceil_mode", "auto_pad", "storage_order"},
                     {},
                     poolBySlices});
    table.push_back({"LpPool",
                     "add",
                     {"kernel_shape", "strides", "pads", "dilations",
                      "ceil_mode", "auto_pad", "p"},
                     {},
                     poolBySlices,
                     11});
    table.push_back(
        {"LpNormalization", "div", {"axis", "p"}, {}, lpNormalization});
    table.push_back({"AveragePool",
                     "div",
                     {"kernel_shape", "strides", "pads", "dilations",
                      "ceil_mode", "auto_pad", "count_include_pad"},
                     {},
                     poolBySlices});
    table.push_back({"Resize",
                     "cast",
                     {"antialias", "axes", "coordinate_transformation_mode",
                      "cubic_coeff_a", "exclude_outside", "extrapolation_value",
                      "keep_aspect_ratio_policy", "mode", "nearest_mode"},
                     {},
                     resizeBySeparableTables});
    table.push_back(
        {"Upsample", "cast", {"mode", "scales"}, {}, upsampleAsResize, 7});
    table.push_back(
        {"ThresholdedRelu", "select", {"alpha"}, {}, thresholdedRelu, 10});
    table.push_back({"EyeLike", "reshape", {"dtype", "k"}, {}, eyeLike});
    table.push_back({"GatherND", "gather", {"batch_dims"}, {}, gatherNDFlat});
    table.push_back(
        {"Einsum", "reduce_sum", {"equation"}, {}, einsumByProducts, 12});
    for (const char *window : {"HannWindow", "HammingWindow", "BlackmanWindow"})
      table.push_back({window,
                       "reshape",
                       {"output_datatype", "periodic"},
                       {},
                       windowFunction,
                       17});
    table.push_back({"ScatterElements",
                     "select",
                     {"axis", "reduction"},
                     {},
                     scatterElements,
                     11});
    table.push_back({"Scatter", "select", {"axis"}, {}, scatterElements, 9});
    table.push_back({"ScatterND", "reshape", {"reduction"}, {}, scatterND, 11});
    table.push_back({"GlobalAveragePool", "reduce_mean", {}, {}, globalPool});
    table.push_back({"GlobalMaxPool", "reduce_max", {}, {}, globalPool});
    table.push_back({"InstanceNormalization",
                     "add",
                     {"epsilon"},
                     {},
                     instanceNormalization});
    table.push_back(
        {"Conv",
         "add",
         {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
         {},
         convolution});
    table.push_back({"MatMulInteger", "matmul", {}, {}, integerMatmul, 10});
    table.push_back({"QLinearMatMul", "matmul", {}, {}, integerMatmul, 10});
    for (const char *op : {"ConvInteger", "QLinearConv"})
      table.push_back({op,
                       "add",
                       {"auto_pad", "dilations", "group", "kernel_shape",
                        "pads", "strides"},
                       {},
                       integerConvolution,
                       10});
    table.push_back({"ConvTranspose",
                     "add",
                     {"auto_pad", "dilations", "group", "kernel_shape",
                      "output_padding", "output_shape", "pads", "strides"},
                     {},
                     transposedConvolution});
    table.push_back({"LRN",
                     "div",
                     {"alpha", "beta", "bias", "size"},
                     {},
                     localResponseNorm});
    table.push_back(
        {"DynamicQuantizeLinear", "cast", {}, {}, dynamicQuantizeLinear, 11});
    table.push_back({"NegativeLogLikelihoodLoss",
                     "div",
                     {"reduction", "ignore_index"},
                     {},
                     likelihoodLoss,
                     13});
    table.push_back({"SoftmaxCrossEntropyLoss",
                     "div",
                     {"reduction", "ignore_index"},
                     {},
                     likelihoodLoss,
                     13});
    // Slice: starts, ends and axes are attributes before opset 10.
    table.push_back({"Slice",
                     "slice",
                     {"starts", "ends", "axes"},
                     {{1, "starts"}, {2, "ends"}, {3, "axes"}, {4, "steps"}}});
    // Pad: pads and value are attributes before opset 11.
    table.push_back({"Pad",
                     "pad",
                     {"mode", "pads", "value"},
                     {{1, "pads"}, {2, "constant_value"}, {3, "axes", 18}},
                     padValue});
    table.push_back({"Expand", "expand", {}, {{1, "shape"}}});
    table.push_back(
        {"ArgMax", "argmax", {"axis", "keepdims", "select_last_index"}, {}});
    table.push_back(
        {"ArgMin", "argmin", {"axis", "keepdims", "select_last_index"}, {}});
    table.push_back({"ReduceSum",
                     "reduce_sum",
                     {"axes", "keepdims", "noop_with_empty_axes"},
                     {{1, "axes", 13}}});
    const std::pair<const char *, const char *> reductions[] = {
        {"ReduceMean", "reduce_mean"},
        {"ReduceMax", "reduce_max"},
        {"ReduceMin", "reduce_min"},
        {"ReduceProd", "reduce_prod"},
        {"ReduceL2", "reduce_l2"},
        {"ReduceLogSumExp", "reduce_log_sum_exp"}};
    // Opset 18 on: axes is input 1 (kAttributeOpsets).
    const std::vector<std::string> reductionAttrs = {"axes", "keepdims",
                                                     "noop_with_empty_axes"};
    const OnnxOp::ConstantInput axesFrom18 = {1, "axes", 18};
    for (auto [onnxName, graphOp] : reductions) {
      bool extreme = std::string(graphOp) == "reduce_max" ||
                     std::string(graphOp) == "reduce_min";
      table.push_back({onnxName,
                       graphOp,
                       reductionAttrs,
                       {axesFrom18},
                       extreme ? booleanExtremes : nullptr});
    }
    table.push_back({"DequantizeLinear",
                     "dequantize_linear",
                     {"axis", "block_size", "output_dtype"},
                     {},
                     dequantizeOutputType});
    // Reductions ONNX defines by others (axes an attribute up to opset 17).
    table.push_back({"ReduceSumSquare",
                     "reduce_sum",
                     reductionAttrs,
                     {axesFrom18},
                     sumOfSquares});
    table.push_back({"ReduceL1",
                     "reduce_sum",
                     reductionAttrs,
                     {axesFrom18},
                     sumOfMagnitudes});
    table.push_back(
        {"ReduceLogSum", "reduce_sum", reductionAttrs, {axesFrom18}, logOfSum});
    table.push_back({"CastLike",
                     "cast",
                     {"saturate", "round_mode"},
                     {},
                     castLikeTarget,
                     15});
    table.push_back({"Trilu", "select", {"upper"}, {}, triluMask, 14});
    table.push_back({"Mean", "div", {}, {}, meanOfInputs});
    table.push_back({"PRelu", "select", {}, {}, preluSelect});
    table.push_back({"Tile", "reshape", {}, {{1, "repeats"}}, tileByBroadcast});
    table.push_back({"Hardmax", "cast", {"axis"}, {}, hardmaxOneHot});
    table.push_back({"CumSum",
                     "reduce_sum",
                     {"exclusive", "reverse"},
                     {{1, "axis"}},
                     cumulativeSum,
                     11});
    table.push_back({"CumProd",
                     "reduce_prod",
                     {"exclusive", "reverse"},
                     {{1, "axis"}},
                     cumulativeSum,
                     26});
    table.push_back(
        {"DepthToSpace", "reshape", {"blocksize", "mode"}, {}, depthToSpace});
    table.push_back(
        {"SpaceToDepth", "reshape", {"blocksize", "mode"}, {}, depthToSpace});
    table.push_back(
        {"BatchNormalization",
         "add",
         {"epsilon", "momentum", "training_mode", "is_test", "spatial"},
         {},
         batchNormalization});
    table.push_back({"MeanVarianceNormalization",
                     "div",
                     {"axes"},
                     {},
                     meanVarianceNormalization});
    return table;
  }();
  return ops;
}

/// An attribute as a graph attribute value.
AttrValue attrValueOf(const onnx::AttributeProto &attr) {
  switch (attr.type()) {
  case onnx::AttributeProto::INT:
    return attr.i();
  case onnx::AttributeProto::FLOAT:
    return static_cast<double>(attr.f());
  case onnx::AttributeProto::STRING:
    return attr.s();
  case onnx::AttributeProto::INTS:
    return std::vector<int64_t>(attr.ints().begin(), attr.ints().end());
  default:
    throw Unsupported{"attribute '" + attr.name() +
                      "' has an unsupported type"};
  }
}

/// The version of the default domain a model imports (0 if none).
int64_t defaultOpset(const onnx::ModelProto &model) {
  int64_t version = 0;
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      version = set.version();
  return version;
}

/// A node's inputs and outputs for namesUsedAsConstants, with the nodes of
/// its subgraphs (If's branches, Loop's and Scan's bodies) before it: the
/// node then reads, besides its inputs, its subgraphs' outputs (which read
/// outer values by name), and a Loop or Scan reads its trip count and
/// condition as constants (they fix the number of iterations, and so the
/// shapes).
struct BindingNode {
  const onnx::NodeProto *node; ///< null for a node with subgraphs
  std::vector<std::string> inputs, outputs;
};

void flattenForBinding(const onnx::GraphProto &graph,
                       std::vector<BindingNode> &flat,
                       std::set<std::string> &names) {
  for (const onnx::NodeProto &node : graph.node()) {
    BindingNode entry{&node,
                      {node.input().begin(), node.input().end()},
                      {node.output().begin(), node.output().end()}};
    for (const onnx::AttributeProto &attr : node.attribute()) {
      std::vector<const onnx::GraphProto *> bodies;
      if (attr.has_g())
        bodies.push_back(&attr.g());
      for (const onnx::GraphProto &body : attr.graphs())
        bodies.push_back(&body);
      for (const onnx::GraphProto *body : bodies) {
        flattenForBinding(*body, flat, names);
        for (const onnx::ValueInfoProto &output : body->output())
          entry.inputs.push_back(output.name());
        entry.node = nullptr;
      }
    }
    if (node.op_type() == "Loop")
      for (int i = 0; i < std::min(node.input_size(), 2); ++i)
        names.insert(node.input(i));
    flat.push_back(std::move(entry));
  }
}

/// Values the table reads as attributes (the constant inputs of nodes), and
/// the values they are computed from (a Range's limit from a window size
/// input); Shape and Size read only their input's shape.
std::set<std::string> namesUsedAsConstants(const onnx::GraphProto &graph) {
  std::set<std::string> names;
  std::vector<BindingNode> flat;
  flattenForBinding(graph, flat, names);
  for (const BindingNode &entry : flat) {
    if (!entry.node)
      continue;
    const onnx::NodeProto &node = *entry.node;
    // Range and ConstantOfShape read every input as a constant.
    if (node.op_type() == "Range" || node.op_type() == "ConstantOfShape")
      names.insert(node.input().begin(), node.input().end());
    // Split's sizes, OneHot's depth and TopK's K are read as constants.
    if ((node.op_type() == "Split" || node.op_type() == "OneHot" ||
         node.op_type() == "TopK") &&
        node.input_size() > 1)
      names.insert(node.input(1));
    // DFT's dft_length and axis, STFT's frame_step and frame_length.
    if (node.op_type() == "DFT" || node.op_type() == "STFT")
      for (int i = 1; i < node.input_size(); ++i)
        if (node.op_type() == "DFT" || i != 2)
          names.insert(node.input(i));
    // A recurrent op's sequence_lens must be constant (and full).
    if ((node.op_type() == "RNN" || node.op_type() == "GRU" ||
         node.op_type() == "LSTM") &&
        node.input_size() > 4)
      names.insert(node.input(4));
    // Dropout's ratio and training_mode decide whether it is the identity;
    // Resize's roi, scales and sizes shape its tables; a window function's
    // size is its length.
    const std::string &type = node.op_type();
    if (type == "Dropout" || type == "Resize" || type == "Upsample")
      for (int i = 1; i < node.input_size(); ++i)
        names.insert(node.input(i));
    if ((type == "HannWindow" || type == "HammingWindow" ||
         type == "BlackmanWindow") &&
        node.input_size() > 0)
      names.insert(node.input(0));
    // AffineGrid's size is its output's shape.
    if (type == "AffineGrid" && node.input_size() > 1)
      names.insert(node.input(1));
    for (const OnnxOp &op : onnxOps())
      if (node.op_type() == op.onnxName)
        for (const OnnxOp::ConstantInput &input : op.constantInputs)
          if (input.index < static_cast<size_t>(node.input_size()))
            names.insert(node.input(input.index));
  }
  // Nodes come in topological order (a subgraph's before the node that
  // holds it): one backward pass closes the set.
  for (size_t i = flat.size(); i-- > 0;) {
    const BindingNode &entry = flat[i];
    if (entry.node &&
        (entry.node->op_type() == "Shape" || entry.node->op_type() == "Size"))
      continue;
    if (std::any_of(
            entry.outputs.begin(), entry.outputs.end(),
            [&](const std::string &output) { return names.count(output); }))
      names.insert(entry.inputs.begin(), entry.inputs.end());
  }
  names.erase("");
  return names;
}

/// Runs ONNX's shape inference with data propagation on a copy of the
/// model whose inputs have the shapes fusec will use. A model it cannot
/// infer is still converted; only its shape subgraphs stay unfolded.
void OnnxConverter::inferShapes(const onnx::ModelProto &model) {
  onnx::ModelProto copy = model;
  onnx::GraphProto &graph = *copy.mutable_graph();
  for (onnx::ValueInfoProto &input : *graph.mutable_input()) {
    auto given = options.inputShapes.find(input.name());
    if (given == options.inputShapes.end())
      continue;
    onnx::TensorShapeProto *shape =
        input.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t dim : given->second)
      shape->add_dim()->set_dim_value(dim);
  }
  // Nodes of newer opsets ONNX 1.12 cannot infer are left out of the copy;
  // those converted already declare their outputs' shapes as inputs.
  uninferredOutputs.clear();
  for (const std::string &output : rewriteForOnnx112Inference(copy, opset)) {
    std::optional<Shape> shape = shapeOf(output);
    std::optional<DType> dtype = dtypeOf(output);
    if (output.empty() || !shape || !dtype) {
      uninferredOutputs.insert(output);
      continue;
    }
    onnx::ValueInfoProto *declared = graph.add_input();
    declared->set_name(output);
    auto *tensorType = declared->mutable_type()->mutable_tensor_type();
    tensorType->set_elem_type(onnxTypeOf(*dtype));
    for (int64_t dim : *shape)
      tensorType->mutable_shape()->add_dim()->set_dim_value(dim);
  }
  // ONNX 1.12's shape inference reads out of bounds on some malformed
  // nodes (a Conv whose input has the wrong rank: fuzz-onnx). A node fusec
  // neither converts nor can fold (its op has no ONNX data propagation)
  // fails conversion whatever its shapes, so it is left out of inference.
  auto inferable = [&](const onnx::NodeProto &node) {
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      return false;
    for (const OnnxOp &op : onnxOps())
      if (node.op_type() == op.onnxName)
        return true;
    for (const auto &special : specialOps())
      if (node.op_type() == special.first)
        return true;
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "");
    return schema && schema->has_data_propagation_function();
  };
  // It also dereferences null for an input defined nowhere, and for a
  // LayerNormalization of a rank-0 input (fuzz-onnx): nodes that read a
  // value no kept node, graph input or initializer defines are left out too
  // (conversion reports them), and so are such normalizations.
  std::unordered_set<std::string> defined = {""}; // "" is an absent input
  std::unordered_map<std::string, int> declaredRank;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    defined.insert(input.name());
    if (input.type().tensor_type().has_shape())
      declaredRank[input.name()] =
          input.type().tensor_type().shape().dim_size();
  }
  for (const onnx::TensorProto &initializer : graph.initializer()) {
    defined.insert(initializer.name());
    declaredRank[initializer.name()] = initializer.dims_size();
  }
  // ONNX 1.12's convolutions' inference takes the kernel's rank
  // from the weights and reads the input's dilations and strides that far,
  // out of bounds when the ranks differ (fuzz-onnx); given kernel_shape, it
  // checks that rank against the input's instead. The copy gets the
  // weights' kernel_shape where they are an initializer or a graph input of
  // known shape; a node whose weights' shape is not known here is left out
  // of inference.
  std::unordered_map<std::string, std::vector<int64_t>> knownDims;
  for (const onnx::TensorProto &initializer : graph.initializer())
    knownDims[initializer.name()] = {initializer.dims().begin(),
                                     initializer.dims().end()};
  for (const onnx::ValueInfoProto &input : graph.input()) {
    const auto &type = input.type().tensor_type();
    if (!type.has_shape() || knownDims.count(input.name()))
      continue;
    std::vector<int64_t> dims;
    for (const auto &dim : type.shape().dim())
      if (dim.has_dim_value())
        dims.push_back(dim.dim_value());
    if (static_cast<int>(dims.size()) == type.shape().dim_size())
      knownDims[input.name()] = dims;
  }
  std::unordered_set<std::string> uninferredConvolutions;
  // The input holding each convolution's weights.
  static const std::map<std::string, int> kWeightInput = {{"Conv", 1},
                                                          {"ConvTranspose", 1},
                                                          {"ConvInteger", 1},
                                                          {"QLinearConv", 3}};
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    auto weightInput = kWeightInput.find(node.op_type());
    if (weightInput == kWeightInput.end() ||
        !(node.domain().empty() || node.domain() == "ai.onnx") ||
        std::any_of(node.attribute().begin(), node.attribute().end(),
                    [](const onnx::AttributeProto &attr) {
                      return attr.name() == "kernel_shape";
                    }))
      continue;
    auto weights = node.input_size() > weightInput->second
                       ? knownDims.find(node.input(weightInput->second))
                       : knownDims.end();
    if (weights == knownDims.end() || weights->second.size() < 2) {
      for (const std::string &output : node.output())
        uninferredConvolutions.insert(output);
      continue;
    }
    onnx::AttributeProto *kernel = node.add_attribute();
    kernel->set_name("kernel_shape");
    kernel->set_type(onnx::AttributeProto::INTS);
    for (size_t d = 2; d < weights->second.size(); ++d)
      kernel->add_ints(weights->second[d]);
  }
  auto keep = [&](const onnx::NodeProto &node) {
    if (!inferable(node))
      return false;
    for (const std::string &output : node.output())
      if (uninferredConvolutions.count(output))
        return false;
    for (const std::string &input : node.input())
      if (!defined.count(input))
        return false;
    if (node.op_type() == "LayerNormalization" && node.input_size() > 0) {
      auto rank = declaredRank.find(node.input(0));
      if (rank != declaredRank.end() && rank->second == 0)
        return false;
    }
    // Its convolutions' and pools' inference divides by the strides and
    // dilations (fuzz-onnx: a stride of 0 raised SIGFPE): a window not
    // positive in every dim is left out (conversion reports it).
    static const std::set<std::string> kWindowed = {
        "Conv",    "ConvTranspose", "ConvInteger", "QLinearConv",
        "MaxPool", "AveragePool",   "LpPool"};
    if (kWindowed.count(node.op_type()))
      for (const onnx::AttributeProto &attr : node.attribute())
        if (attr.name() == "strides" || attr.name() == "dilations" ||
            attr.name() == "kernel_shape")
          for (int64_t value : attr.ints())
            if (value < 1)
              return false;
    for (const std::string &output : node.output())
      defined.insert(output);
    return true;
  };
  google::protobuf::RepeatedPtrField<onnx::NodeProto> &nodes =
      *graph.mutable_node();
  nodes.erase(
      std::remove_if(nodes.begin(), nodes.end(),
                     [&](const onnx::NodeProto &node) { return !keep(node); }),
      nodes.end());
  std::unordered_map<std::string, onnx::TensorShapeProto> data;
  try {
    // ONNX's inference trusts what its checker guarantees (fuzz-onnx found
    // further null dereferences in it on models the checker rejects): a
    // model the checker rejects is converted without inferred shapes, and
    // conversion reports what is wrong with it.
    // The checker refuses IR versions newer than its own, a limit that says
    // nothing about the graph: the copy claims at most the one it knows.
    if (copy.ir_version() > onnx::IR_VERSION)
      copy.set_ir_version(onnx::IR_VERSION);
    onnx::checker::check_model(copy);
    onnx::shape_inference::InferShapes(
        copy, onnx::OpSchemaRegistry::Instance(),
        onnx::ShapeInferenceOptions(false, 0, /*data propagation=*/true),
        &data);
  } catch (const std::exception &) {
    return;
  }
  auto record = [&](const onnx::ValueInfoProto &info) {
    if (!info.type().has_tensor_type())
      return;
    if (std::optional<DType> dtype =
            dtypeOfOnnx(info.type().tensor_type().elem_type()))
      inferredTypes[info.name()] = *dtype;
    if (!info.type().tensor_type().has_shape())
      return;
    Shape shape;
    for (const auto &dim : info.type().tensor_type().shape().dim()) {
      if (!dim.has_dim_value())
        return;
      shape.push_back(dim.dim_value());
    }
    inferredShapes[info.name()] = shape;
  };
  for (const onnx::ValueInfoProto &info : graph.value_info())
    record(info);
  for (const onnx::ValueInfoProto &info : graph.output())
    record(info);
  for (const auto &[name, shape] : data) {
    std::vector<int64_t> values;
    for (const auto &dim : shape.dim()) {
      if (!dim.has_dim_value())
        break;
      values.push_back(dim.dim_value());
    }
    if (values.size() == static_cast<size_t>(shape.dim_size()))
      shapeValues[name] = values;
  }
}

/// A node whose every output is a known shape value (Shape of a static
/// tensor and the integer math on it) becomes constants, so Reshape,
/// Expand and Slice read static operands.
bool OnnxConverter::foldToConstants(const onnx::NodeProto &node) {
  if (node.output_size() == 0)
    return false;
  // Propagated values are trusted only where they are shapes: over
  // constants alone fusec computes the node itself, exactly (ONNX 1.12's
  // data propagation reads int64 initializers through 32 bits), and a
  // value that went through another dtype (a Cast to float and back) is
  // passed on unchanged by the propagation, not converted.
  bool overConstantsOnly = true, overShapesOnly = true;
  for (const std::string &input : node.input()) {
    if (input.empty())
      continue;
    std::string name = resolve(input);
    auto constant = constants.find(name);
    auto type = inferredTypes.find(name);
    overConstantsOnly &= constant != constants.end();
    overShapesOnly &=
        constant != constants.end()
            ? constant->second.dtype == DType::I64 ||
                  constant->second.dtype == DType::I32
            : type != inferredTypes.end() && type->second == DType::I64;
  }
  bool shapeOfTensor = node.op_type() == "Shape" || node.op_type() == "Size";
  if (overConstantsOnly || (!overShapesOnly && !shapeOfTensor))
    return false;
  for (const std::string &output : node.output()) {
    auto value = shapeValues.find(output);
    auto shape = inferredShapes.find(output);
    // Data propagation also carries values through a Cast to another
    // dtype (a float, an i32): only i64 values are shapes; the rest convert
    // as their ops define.
    auto type = inferredTypes.find(output);
    if (type == inferredTypes.end() || type->second != DType::I64)
      return false;
    if (value == shapeValues.end() || shape == inferredShapes.end() ||
        shape->second.size() > 1 ||
        numElements(shape->second) !=
            static_cast<int64_t>(value->second.size()))
      return false;
  }
  for (const std::string &output : node.output()) {
    const std::vector<int64_t> &values = shapeValues[output];
    Tensor tensor(DType::I64, inferredShapes[output]);
    std::copy(values.begin(), values.end(), tensor.as<int64_t>());
    addConstant(output, std::move(tensor));
  }
  return true;
}

/// Shape computations over constants that ONNX's data propagation leaves
/// (Size, Neg, an integer ConstantOfShape, arithmetic on shapes, Concat of
/// constants, ...): evaluated exactly (OnnxShapeFolding.cpp), so Reshape,
/// Expand, Slice and ConstantOfShape get constant operands.
bool OnnxConverter::foldShapeNode(const onnx::NodeProto &node) {
  if (node.output_size() != 1)
    return false; // convertNode reports a node without outputs
  std::vector<const Tensor *> inputs;
  for (const std::string &input : node.input()) {
    auto it = input.empty() ? constants.end() : constants.find(resolve(input));
    inputs.push_back(it == constants.end() ? nullptr : &it->second);
  }
  std::optional<Shape> inputShape;
  if (node.input_size() > 0 && !node.input(0).empty())
    inputShape = shapeOf(resolve(node.input(0)));
  bool isBound = boundNames.count(node.output(0));
  std::optional<Tensor> value =
      foldShapeComputation(node, opset, inputs, inputShape, isBound);
  if (!value)
    return false;
  addConstant(node.output(0), std::move(*value));
  return true;
}

/// Shape and Size of a value whose static shape is not known here (they
/// fold to constants otherwise).
void OnnxConverter::convertShapeOrSize(const onnx::NodeProto &node) {
  throw Unsupported{node.op_type() + " needs the static shape of '" +
                    node.input(0) +
                    "', which shape inference did not give (fusec has no "
                    "dynamic shapes)"};
}

std::optional<Shape> OnnxConverter::shapeOf(const std::string &name) const {
  for (const GraphInput &input : graph.inputs)
    if (input.name == name)
      return input.shape;
  if (auto it = constants.find(name); it != constants.end())
    return it->second.shape;
  if (auto it = inferredShapes.find(name); it != inferredShapes.end())
    return it->second;
  if (auto type = convertedTypeOf(name))
    return type->second;
  return std::nullopt;
}

std::optional<DType> OnnxConverter::dtypeOf(const std::string &name) const {
  for (const GraphInput &input : graph.inputs)
    if (input.name == name)
      return input.dtype;
  if (auto it = constants.find(name); it != constants.end())
    return it->second.dtype;
  if (auto it = inferredTypes.find(name); it != inferredTypes.end())
    return it->second;
  if (auto type = convertedTypeOf(name))
    return type->first;
  return std::nullopt;
}

Shape OnnxConverter::requireShape(const std::string &name,
                                  const std::string &what) const {
  std::optional<Shape> shape = shapeOf(name);
  if (!shape)
    throw Unsupported{what + " needs the static shape of '" + name +
                      "', which shape inference did not give"};
  return *shape;
}

DType OnnxConverter::requireDType(const std::string &name,
                                  const std::string &what) const {
  std::optional<DType> dtype = dtypeOf(name);
  if (!dtype)
    throw Unsupported{what + " needs the dtype of '" + name +
                      "', which shape inference did not give"};
  return *dtype;
}

std::string OnnxConverter::addStep(const GraphNode &owner,
                                   const std::string &op,
                                   std::vector<std::string> inputs,
                                   const std::string &suffix,
                                   std::map<std::string, AttrValue> attrs) {
  std::string output = owner.outputs.at(0) + "_" + suffix;
  addOutputStep(owner, op, std::move(inputs), output, std::move(attrs));
  return output;
}

void OnnxConverter::addOutputStep(const GraphNode &owner, const std::string &op,
                                  std::vector<std::string> inputs,
                                  const std::string &output,
                                  std::map<std::string, AttrValue> attrs) {
  GraphNode step;
  step.name = owner.name + "_" + output;
  step.op = op;
  step.inputs = std::move(inputs);
  step.outputs = {output};
  step.attrs = std::move(attrs);
  graph.nodes.push_back(std::move(step));
}

std::string OnnxConverter::addStepConstant(const GraphNode &owner,
                                           const std::string &suffix,
                                           Tensor value) {
  std::string name = owner.outputs.at(0) + "_" + suffix;
  addConstant(name, std::move(value));
  return name;
}

/// Pow with ONNX's operand types: the exponent may have another dtype than
/// the base, and the result has the base's. A float base takes the
/// exponent cast to its dtype (exact for the integer exponents ONNX
/// allows); an integer base with an integer exponent is raised exactly in
/// i64 (the integer pow row: wrapping, as NumPy's) and wrapped back to the
/// base's dtype; with a float exponent it is raised in f64, as NumPy
/// computes it, and the result converted back (truncated).
void OnnxConverter::convertPow(const onnx::NodeProto &node) {
  if (node.input_size() != 2)
    throw Unsupported{"Pow takes a base and an exponent"};
  // Before opset 7 the exponent broadcasts only with broadcast = 1, to the
  // base's trailing dims or to its dims from `axis` on.
  std::optional<int64_t> legacyAxis;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (opset < 7 && attr.name() == "axis")
      legacyAxis = attr.i();
    else if (opset >= 7 || attr.name() != "broadcast")
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
  }
  std::string base = resolve(node.input(0)), exponent = resolve(node.input(1));
  std::optional<DType> baseType = dtypeOf(base),
                       exponentType = dtypeOf(exponent);
  if (!baseType || !exponentType)
    throw Unsupported{"Pow needs its operands' dtypes, which shape inference "
                      "did not give"};
  std::string name = node.name().empty() ? node.output(0) : node.name();
  auto add = [&](const std::string &op, std::vector<std::string> inputs,
                 const std::string &output,
                 std::map<std::string, AttrValue> attrs = {}) {
    GraphNode step;
    step.name = output == node.output(0) ? name : name + "_" + output;
    step.op = op;
    step.inputs = std::move(inputs);
    step.outputs = {output};
    step.attrs = std::move(attrs);
    graph.nodes.push_back(std::move(step));
    return output;
  };
  if (legacyAxis) {
    GraphNode owner;
    owner.name = name;
    owner.inputs = {base, exponent};
    owner.outputs = {node.output(0)};
    broadcastFromAxis(owner, *legacyAxis);
    exponent = owner.inputs[1];
  }
  bool floatBase = isFloat(*baseType);
  DType computeType = floatBase                ? *baseType
                      : isFloat(*exponentType) ? DType::F64
                                               : DType::I64;
  auto asCompute = [&](const std::string &value, DType dtype,
                       const std::string &suffix) {
    return dtype == computeType
               ? value
               : add("cast", {value}, node.output(0) + suffix,
                     {{"dtype", std::string(dtypeName(computeType))}});
  };
  std::string x = asCompute(base, *baseType, "_base");
  std::string y = asCompute(exponent, *exponentType, "_exponent");
  if (computeType == *baseType) {
    add("pow", {x, y}, node.output(0));
    return;
  }
  std::string power =
      add("pow", {x, y}, node.output(0) + "_" + dtypeName(computeType));
  add("cast", {power}, node.output(0),
      {{"dtype", std::string(dtypeName(*baseType))}});
}

/// Split: one slice per output along `axis`, sized by the constant
/// `split` input or, without it, equal parts of the (static) dim.
void OnnxConverter::convertSplit(const onnx::NodeProto &node) {
  int64_t axis = 0;
  // Before opset 13 the sizes are the attribute `split`; from 13, input 1.
  // From opset 18 num_outputs may say how many parts there are.
  std::optional<std::vector<int64_t>> splitAttribute;
  std::optional<int64_t> numOutputs;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name() == "axis")
      axis = attr.i();
    else if (attr.name() == "split")
      splitAttribute.emplace(attr.ints().begin(), attr.ints().end());
    else if (attr.name() == "num_outputs")
      numOutputs = attr.i();
    else
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
  }
  bool splitInput = node.input_size() > 1 && !node.input(1).empty();
  if (numOutputs && (splitInput || *numOutputs != node.output_size()))
    throw Unsupported{
        splitInput ? "Split takes num_outputs or the split input, not both"
                   : "Split's num_outputs is " + std::to_string(*numOutputs) +
                         " but it has " + std::to_string(node.output_size()) +
                         " outputs"};
  std::string input = resolve(node.input(0));
  std::optional<Shape> shape = shapeOf(input);
  if (!shape)
    throw Unsupported{"Split needs its input's static shape"};
  int64_t rank = shape->size();
  axis = resolvedAxis(axis, rank);
  std::vector<int64_t> sizes;
  if (splitAttribute) {
    sizes = *splitAttribute;
  } else if (splitInput) {
    sizes = integersOf(constantValue(resolve(node.input(1)), "input 1 (split)"),
                       "input 1 (split)");
  } else if (numOutputs) {
    // Parts of ceil(dim / num_outputs), the last one what is left.
    int64_t parts = *numOutputs, dim = (*shape)[axis];
    int64_t part = parts > 0 ? (dim + parts - 1) / parts : 0;
    if (parts < 1 || dim - (parts - 1) * part < 0)
      throw Unsupported{"Split of a dim of " + std::to_string(dim) + " into " +
                        std::to_string(parts) + " parts of " +
                        std::to_string(part) + " leaves too little"};
    sizes.assign(parts, part);
    sizes.back() = dim - (parts - 1) * part;
  } else {
    int64_t parts = node.output_size(), dim = (*shape)[axis];
    if (parts == 0 || dim % parts != 0)
      throw Unsupported{"Split of a dim of " + std::to_string(dim) + " into " +
                        std::to_string(parts) + " equal parts"};
    sizes.assign(parts, dim / parts);
  }
  if (static_cast<int>(sizes.size()) != node.output_size())
    throw Unsupported{"Split has " + std::to_string(node.output_size()) +
                      " outputs but " + std::to_string(sizes.size()) +
                      " sizes"};
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0 || size > (*shape)[axis])
      throw Unsupported{"Split's size " + std::to_string(size) +
                        " is not within the dim of " +
                        std::to_string((*shape)[axis])};
    total += size;
  }
  if (total != (*shape)[axis])
    throw Unsupported{"Split's sizes add up to " + std::to_string(total) +
                      ", not the dim of " + std::to_string((*shape)[axis])};
  // A small constant (a shape being taken apart) splits into constants,
  // which Reshape, Expand and ConstantOfShape can read.
  if (const Tensor *value = constantOrNull(input);
      value && value->numElements() <= 4096) {
    size_t width = dtypeBytes(value->dtype);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= (*shape)[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= (*shape)[d];
    int64_t offset = 0;
    for (int i = 0; i < node.output_size(); ++i) {
      Shape part = *shape;
      part[axis] = sizes[i];
      Tensor piece(value->dtype, part);
      size_t row = sizes[i] * inner * width;
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(piece.bytes.data() + o * row,
                    value->bytes.data() +
                        ((o * (*shape)[axis] + offset) * inner) * width,
                    row);
      if (!node.output(i).empty())
        addConstant(node.output(i), std::move(piece));
      offset += sizes[i];
    }
    return;
  }
  int64_t offset = 0;
  for (int i = 0; i < node.output_size(); ++i) {
    if (!node.output(i).empty()) {
      GraphNode slice;
      slice.name = (node.name().empty() ? node.output(i) : node.name()) + "_" +
                   std::to_string(i);
      slice.op = "slice";
      slice.inputs = {input};
      slice.outputs = {node.output(i)};
      slice.attrs["starts"] = std::vector<int64_t>{offset};
      slice.attrs["ends"] = std::vector<int64_t>{offset + sizes[i]};
      slice.attrs["axes"] = std::vector<int64_t>{axis};
      graph.nodes.push_back(std::move(slice));
      // ONNX 1.12 infers no parts of a split whose sizes are computed.
      if (std::optional<DType> dtype = dtypeOf(input)) {
        Shape part = *shape;
        part[axis] = sizes[i];
        recordValue(node.output(i), part, *dtype);
      }
    }
    offset += sizes[i];
  }
}

/// ConstantOfShape: its value (a one-element tensor, 0.0f by default)
/// broadcast to the constant shape; the broadcast is read through strides,
/// never materialized.
void OnnxConverter::convertConstantOfShape(const onnx::NodeProto &node) {
  Tensor value(DType::F32, {});
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name() != "value")
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
    value = tensorFromProto(attr.t(), modelDir);
    if (value.numElements() != 1)
      throw Unsupported{"ConstantOfShape's value must have one element"};
    value.shape = {};
  }
  std::vector<int64_t> shape =
      integersOf(constantValue(resolve(node.input(0)), "input 0 (shape)"),
                 "input 0 (shape)");
  std::string scalar = node.output(0) + "_value";
  addConstant(scalar, std::move(value));
  GraphNode expand;
  expand.name = node.name().empty() ? node.output(0) : node.name();
  expand.op = "expand";
  expand.inputs = {scalar};
  expand.outputs = {node.output(0)};
  expand.attrs["shape"] = shape;
  graph.nodes.push_back(std::move(expand));
}

/// Range over constant start, limit and delta: a constant, as ONNX
/// defines it (max(ceil((limit - start) / delta), 0) elements).
void OnnxConverter::convertRange(const onnx::NodeProto &node) {
  if (node.input_size() != 3)
    throw Unsupported{"Range takes start, limit and delta"};
  const Tensor &start = constantValue(resolve(node.input(0)), "start");
  const Tensor &limit = constantValue(resolve(node.input(1)), "limit");
  const Tensor &delta = constantValue(resolve(node.input(2)), "delta");
  if (start.numElements() != 1 || limit.numElements() != 1 ||
      delta.numElements() != 1 || start.dtype != limit.dtype ||
      start.dtype != delta.dtype)
    throw Unsupported{"Range's operands must be scalars of one dtype"};
  bool isInt = start.dtype == DType::I64 || start.dtype == DType::I32;
  if (isInt) {
    int64_t first = integersOf(start, "start")[0];
    int64_t last = integersOf(limit, "limit")[0];
    int64_t step = integersOf(delta, "delta")[0];
    if (step == 0)
      throw Unsupported{"Range's delta is 0"};
    int64_t count = std::max<int64_t>(
        0, (last - first + step + (step > 0 ? -1 : 1)) / step);
    Tensor result(start.dtype, {count});
    for (int64_t i = 0; i < count; ++i)
      result.set(i, static_cast<double>(first + i * step));
    addConstant(node.output(0), std::move(result));
    return;
  }
  double first = start.at(0), last = limit.at(0), step = delta.at(0);
  if (step == 0 || !std::isfinite(first) || !std::isfinite(last))
    throw Unsupported{"Range needs finite bounds and a non-zero delta"};
  int64_t count = std::max<int64_t>(
      0, static_cast<int64_t>(std::ceil((last - first) / step)));
  Tensor result(start.dtype, {count});
  for (int64_t i = 0; i < count; ++i)
    result.set(i, first + i * step);
  addConstant(node.output(0), std::move(result));
}

void OnnxConverter::addLayerNormStatistics(const onnx::NodeProto &proto,
                                           const GraphNode &node) {
  bool wantsMean = proto.output_size() > 1 && !proto.output(1).empty();
  bool wantsInvStdDev = proto.output_size() > 2 && !proto.output(2).empty();
  if (!wantsMean && !wantsInvStdDev)
    return;
  const std::string &x = node.inputs.at(0);
  int64_t rank = -1;
  if (auto it = inferredShapes.find(x); it != inferredShapes.end())
    rank = it->second.size();
  for (const GraphInput &input : graph.inputs)
    if (input.name == x)
      rank = input.shape.size();
  if (rank < 0)
    throw Unsupported{"the Mean and InvStdDev outputs need the input's rank, "
                      "which shape inference did not give"};
  auto axisAttr = node.attrs.find("axis");
  int64_t axis =
      axisAttr == node.attrs.end() ? -1 : std::get<int64_t>(axisAttr->second);
  axis = resolvedAxis(axis, rank);
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  auto epsilonAttr = node.attrs.find("epsilon");
  double epsilon = epsilonAttr == node.attrs.end()
                       ? 1e-5
                       : std::get<double>(epsilonAttr->second);
  std::string prefix = proto.output(0) + "_statistics_";
  auto add = [&](const std::string &op, std::vector<std::string> inputs,
                 const std::string &output,
                 std::map<std::string, AttrValue> attrs = {}) {
    GraphNode step;
    step.name = node.name + "_" + output;
    step.op = op;
    step.inputs = std::move(inputs);
    step.outputs = {output};
    step.attrs = std::move(attrs);
    graph.nodes.push_back(std::move(step));
    return output;
  };
  const std::map<std::string, AttrValue> reduce = {{"axes", axes},
                                                   {"keepdims", int64_t(1)}};
  // f32 statistics (stash_type 1), as ONNX's function body computes them.
  std::string xf = add("cast", {x}, prefix + "x", {{"dtype", "f32"}});
  std::string mean = add("reduce_mean", {xf},
                         wantsMean ? proto.output(1) : prefix + "mean", reduce);
  if (!wantsInvStdDev)
    return;
  std::string centered = add("sub", {xf, mean}, prefix + "centered");
  std::string squared = add("mul", {centered, centered}, prefix + "squared");
  std::string variance =
      add("reduce_mean", {squared}, prefix + "variance", reduce);
  Tensor epsilonValue(DType::F32, {});
  epsilonValue.set(0, epsilon);
  addConstant(prefix + "epsilon", epsilonValue);
  std::string shifted =
      add("add", {variance, prefix + "epsilon"}, prefix + "shifted");
  std::string deviation = add("sqrt", {shifted}, prefix + "deviation");
  add("reciprocal", {deviation}, proto.output(2));
}

/// Constant: its `value` tensor, or a float or int (list) attribute.
void OnnxConverter::convertConstant(const onnx::NodeProto &node) {
  if (node.attribute_size() != 1)
    throw Unsupported{"Constant needs exactly one value attribute"};
  const onnx::AttributeProto &attr = node.attribute(0);
  Tensor value;
  if (attr.name() == "value") {
    value = tensorFromProto(attr.t(), modelDir);
  } else if (attr.name() == "value_float" || attr.name() == "value_int") {
    bool isFloat = attr.name() == "value_float";
    value = Tensor(isFloat ? DType::F32 : DType::I64, {});
    if (isFloat)
      value.set(0, attr.f());
    else
      value.as<int64_t>()[0] = attr.i();
  } else if (attr.name() == "value_floats" || attr.name() == "value_ints") {
    bool isFloat = attr.name() == "value_floats";
    int64_t count = isFloat ? attr.floats_size() : attr.ints_size();
    value = Tensor(isFloat ? DType::F32 : DType::I64, {count});
    for (int64_t i = 0; i < count; ++i) {
      if (isFloat)
        value.set(i, attr.floats(i));
      else
        value.as<int64_t>()[i] = attr.ints(i);
    }
  } else {
    throw Unsupported{"Constant attribute '" + attr.name() +
                      "' is not supported"};
  }
  addConstant(node.output(0), std::move(value));
}

void OnnxConverter::convertIdentity(const onnx::NodeProto &node) {
  aliases[node.output(0)] = resolve(node.input(0));
}

/// The names a subgraph defines: its inputs, initializers and node outputs.
std::set<std::string> namesDefinedIn(const onnx::GraphProto &graph) {
  std::set<std::string> names;
  for (const onnx::ValueInfoProto &input : graph.input())
    names.insert(input.name());
  for (const onnx::TensorProto &initializer : graph.initializer())
    names.insert(initializer.name());
  for (const onnx::NodeProto &node : graph.node())
    names.insert(node.output().begin(), node.output().end());
  names.erase("");
  return names;
}

/// Prefixes every name of `scoped` in `graph`: its definitions (where
/// `definitions`) and every reference to them, in nested subgraphs too (a
/// name a nested subgraph defines itself is its own there).
void renameScoped(onnx::GraphProto &graph, std::set<std::string> scoped,
                  const std::string &prefix, bool definitions) {
  if (!definitions)
    for (const std::string &own : namesDefinedIn(graph))
      scoped.erase(own);
  auto rename = [&](std::string *name) {
    if (scoped.count(*name))
      *name = prefix + *name;
  };
  if (definitions) {
    for (onnx::ValueInfoProto &input : *graph.mutable_input())
      rename(input.mutable_name());
    for (onnx::TensorProto &initializer : *graph.mutable_initializer())
      rename(initializer.mutable_name());
  }
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    for (std::string &input : *node.mutable_input())
      rename(&input);
    if (definitions)
      for (std::string &output : *node.mutable_output())
        rename(&output);
    for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
      if (attr.has_g())
        renameScoped(*attr.mutable_g(), scoped, prefix, false);
      for (onnx::GraphProto &nested : *attr.mutable_graphs())
        renameScoped(nested, scoped, prefix, false);
    }
  }
  for (onnx::ValueInfoProto &output : *graph.mutable_output())
    rename(output.mutable_name());
}

/// The subgraph attribute `name` of a control-flow node; any attribute not
/// in `known` is refused.
const onnx::GraphProto &subgraphAttr(const onnx::NodeProto &node,
                                     const std::string &name,
                                     const std::set<std::string> &known) {
  const onnx::GraphProto *found = nullptr;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (!known.count(attr.name()))
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
    if (attr.name() == name && attr.type() == onnx::AttributeProto::GRAPH)
      found = &attr.g();
  }
  if (!found)
    throw Unsupported{node.op_type() + " needs the graph attribute '" + name +
                      "'"};
  return *found;
}

/// Unrolled control flow is bounded: a Loop of a million iterations would
/// be a graph of millions of nodes (iterations count apart from the body's
/// nodes: each also adds steps of its own).
constexpr size_t kMaxUnrolledNodes = 1 << 16;
constexpr int64_t kMaxLoopIterations = 1 << 14;

/// The index'th slice of `value` along `axis`, the axis dropped.
std::string sliceAt(OnnxConverter &converter, const GraphNode &owner,
                    const std::string &value, const Shape &shape, int64_t axis,
                    int64_t index, const std::string &suffix) {
  Shape element = shape;
  element.erase(element.begin() + axis);
  std::string slice =
      converter.addStep(owner, "slice", {value}, suffix + "_slice",
                        {{"starts", std::vector<int64_t>{index}},
                         {"ends", std::vector<int64_t>{index + 1}},
                         {"axes", std::vector<int64_t>{axis}}});
  return viewStep(converter, owner, slice, element, suffix);
}

/// `values` (of one shape) stacked along a new dim `axis`, as `output`.
void stackAlong(OnnxConverter &converter, const GraphNode &owner,
                const std::vector<std::string> &values, int64_t axis,
                const std::string &output) {
  Shape element = converter.requireShape(values.at(0), owner.name);
  Shape unit = element;
  unit.insert(unit.begin() + axis, 1);
  std::vector<std::string> units;
  for (size_t i = 0; i < values.size(); ++i) {
    if (converter.requireShape(values[i], owner.name) != element)
      throw Unsupported{"the values stacked into output '" + output +
                        "' change shape between iterations"};
    units.push_back(viewStep(converter, owner, values[i], unit,
                             output + "_" + std::to_string(i)));
  }
  converter.addOutputStep(owner, "concat", units, output, {{"axis", axis}});
}

void OnnxConverter::chargeUnrolling(size_t units) {
  unrolled += units;
  if (unrolled > kMaxUnrolledNodes)
    throw Unsupported{"its control flow unrolls to more than " +
                      std::to_string(kMaxUnrolledNodes) +
                      " nodes, past what fusec unrolls"};
}

void OnnxConverter::convertOrFold(const onnx::NodeProto &node) {
  if (!foldShapeNode(node) && !foldToConstants(node))
    convertNode(node);
}

std::vector<std::string> OnnxConverter::convertSubgraph(
    const onnx::GraphProto &body, const std::string &scope,
    const std::vector<std::string> &inputs, const std::string &what) {
  if (body.input_size() != static_cast<int>(inputs.size()))
    throw Unsupported{what + " declares " + std::to_string(body.input_size()) +
                      " inputs but is given " + std::to_string(inputs.size())};
  // Copying the body costs its size, nested subgraphs included, whether or
  // not their nodes are converted.
  std::function<size_t(const onnx::GraphProto &)> size =
      [&](const onnx::GraphProto &graph) {
        size_t total = 1 + graph.node_size() + graph.initializer_size();
        for (const onnx::NodeProto &node : graph.node())
          for (const onnx::AttributeProto &attr : node.attribute()) {
            if (attr.has_g())
              total += size(attr.g());
            for (const onnx::GraphProto &nested : attr.graphs())
              total += size(nested);
          }
        return total;
      };
  chargeUnrolling(size(body));
  onnx::GraphProto scoped = body;
  renameScoped(scoped, namesDefinedIn(body), scope + "/", true);
  for (int i = 0; i < scoped.input_size(); ++i)
    if (!scoped.input(i).name().empty())
      aliases[scoped.input(i).name()] = resolve(inputs[i]);
  for (int i = 0; i < body.initializer_size(); ++i) {
    Tensor value = tensorFromProto(body.initializer(i), modelDir);
    chargeUnrolling(value.bytes.size() / 65536);
    std::vector<std::string> &made =
        subgraphConstants[body.initializer(i).name()];
    auto same = std::find_if(made.begin(), made.end(), [&](const auto &name) {
      const Tensor &other = constants.at(name);
      return other.dtype == value.dtype && other.shape == value.shape &&
             other.bytes == value.bytes;
    });
    if (same != made.end()) {
      aliases[scoped.initializer(i).name()] = *same;
      continue;
    }
    made.push_back(scoped.initializer(i).name());
    addConstant(made.back(), std::move(value));
  }
  for (const onnx::NodeProto &node : scoped.node()) {
    try {
      convertOrFold(node);
    } catch (const Unsupported &inner) {
      throw Unsupported{what + ", node '" + node.name() + "' (" +
                        node.op_type() + "): " + inner.reason};
    }
  }
  std::vector<std::string> outputs;
  for (const onnx::ValueInfoProto &output : scoped.output())
    outputs.push_back(resolve(output.name()));
  return outputs;
}

/// If: a condition known here (a constant, or folded from static shapes)
/// converts the taken branch alone; one computed at run time converts both
/// and selects each output, which then must have one type in both.
void OnnxConverter::convertIf(const onnx::NodeProto &node) {
  const std::set<std::string> known = {"then_branch", "else_branch"};
  const onnx::GraphProto &thenBranch = subgraphAttr(node, "then_branch", known);
  const onnx::GraphProto &elseBranch = subgraphAttr(node, "else_branch", known);
  if (node.input_size() != 1 || node.input(0).empty())
    throw Unsupported{"If takes one input, cond"};
  for (const onnx::GraphProto *branch : {&thenBranch, &elseBranch})
    if (branch->output_size() != node.output_size())
      throw Unsupported{"If has " + std::to_string(node.output_size()) +
                        " outputs but a branch gives " +
                        std::to_string(branch->output_size())};
  const std::string scope = newScope(node);
  const std::string cond = resolve(node.input(0));
  if (const Tensor *value = constantOrNull(cond)) {
    if (value->numElements() != 1)
      throw Unsupported{"If's cond must have one element, not " +
                        std::to_string(value->numElements())};
    bool taken = value->at(0) != 0;
    std::vector<std::string> outputs = convertSubgraph(
        taken ? thenBranch : elseBranch, scope + (taken ? "/then" : "/else"),
        {}, taken ? "then_branch" : "else_branch");
    for (int i = 0; i < node.output_size(); ++i)
      if (!node.output(i).empty()) // "" names an absent optional input
        aliases[node.output(i)] = outputs[i];
    return;
  }
  Shape condShape = requireShape(cond, "If");
  if (requireDType(cond, "If") != DType::I1 || numElements(condShape) != 1)
    throw Unsupported{"If's cond must be one bool"};
  std::vector<std::string> thenValues =
      convertSubgraph(thenBranch, scope + "/then", {}, "then_branch");
  std::vector<std::string> elseValues =
      convertSubgraph(elseBranch, scope + "/else", {}, "else_branch");
  GraphNode owner;
  owner.name = scope;
  owner.outputs = {node.output(0)};
  std::string flag =
      condShape.empty() ? cond : viewStep(*this, owner, cond, {}, "cond");
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    Shape thenShape = requireShape(thenValues[i], "If"),
          elseShape = requireShape(elseValues[i], "If");
    DType thenType = requireDType(thenValues[i], "If"),
          elseType = requireDType(elseValues[i], "If");
    if (thenShape != elseShape || thenType != elseType)
      throw Unsupported{
          "its cond is computed at run time and output " + std::to_string(i) +
          " is " + dtypeName(thenType) + "[" + formatShape(thenShape) +
          "] in then_branch but " + dtypeName(elseType) + "[" +
          formatShape(elseShape) +
          "] in else_branch: fusec's shapes are static, so both branches "
          "must give one type"};
    if (thenValues[i] == elseValues[i]) {
      aliases[node.output(i)] = thenValues[i];
      continue;
    }
    addOutputStep(owner, "select", {flag, thenValues[i], elseValues[i]},
                  node.output(i));
  }
}

/// Loop, unrolled: its trip count M and its condition must be known here
/// before each iteration (constants, or folded from them), since they fix
/// how many iterations there are and so its scan outputs' shapes.
void OnnxConverter::convertLoop(const onnx::NodeProto &node) {
  const onnx::GraphProto &body = subgraphAttr(node, "body", {"body"});
  if (node.input_size() < 2)
    throw Unsupported{"Loop takes M, cond and the loop-carried values"};
  const size_t carriedCount = node.input_size() - 2;
  if (body.input_size() != static_cast<int>(carriedCount) + 2 ||
      body.output_size() < static_cast<int>(carriedCount) + 1)
    throw Unsupported{"Loop's body must take the iteration number, the "
                      "condition and the " +
                      std::to_string(carriedCount) +
                      " loop-carried values, and give the condition and "
                      "them back"};
  const size_t scanCount = body.output_size() - 1 - carriedCount;
  if (static_cast<size_t>(node.output_size()) > carriedCount + scanCount)
    throw Unsupported{"Loop has more outputs than its body gives"};
  std::optional<int64_t> tripCount;
  if (!node.input(0).empty()) {
    const Tensor &m =
        constantValue(resolve(node.input(0)), "Loop's trip count M");
    std::vector<int64_t> values = integersOf(m, "Loop's trip count M");
    if (values.size() != 1)
      throw Unsupported{"Loop's trip count M must be one integer"};
    tripCount = values[0];
  }
  const bool checksCond = !node.input(1).empty();
  if (!tripCount && !checksCond)
    throw Unsupported{"a Loop with neither a trip count nor a condition "
                      "never ends"};
  const std::string scope = newScope(node);
  GraphNode owner;
  owner.name = scope;
  owner.outputs = {scope};
  auto condNow = [&](const std::string &value) {
    const Tensor *known = constantOrNull(value);
    if (!known || known->numElements() != 1)
      throw Unsupported{"Loop's condition is computed at run time: its trip "
                        "count, and so its outputs' shapes, are not known "
                        "here (fusec's shapes are static)"};
    return known->at(0) != 0;
  };
  std::string cond =
      checksCond ? resolve(node.input(1))
                 : addStepConstant(owner, "true", scalarTensor(DType::I1, 1));
  std::vector<std::string> carried;
  for (size_t i = 0; i < carriedCount; ++i)
    carried.push_back(resolve(node.input(2 + i)));
  std::vector<std::vector<std::string>> scans(scanCount);
  int64_t iteration = 0;
  for (; !tripCount || iteration < *tripCount; ++iteration) {
    if (checksCond && !condNow(cond))
      break;
    if (iteration >= kMaxLoopIterations)
      throw Unsupported{"Loop runs more than " +
                        std::to_string(kMaxLoopIterations) +
                        " iterations, past what fusec unrolls"};
    chargeUnrolling(1 + carriedCount + scanCount);
    const std::string at = std::to_string(iteration);
    std::vector<std::string> inputs = {
        addStepConstant(owner, at + "_iteration_num",
                        scalarTensor(DType::I64, iteration)),
        cond};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    std::vector<std::string> outputs = convertSubgraph(
        body, scope + "/" + at, inputs, "Loop's body (iteration " + at + ")");
    if (checksCond)
      cond = outputs[0];
    std::copy(outputs.begin() + 1, outputs.begin() + 1 + carriedCount,
              carried.begin());
    for (size_t k = 0; k < scanCount; ++k)
      scans[k].push_back(outputs[1 + carriedCount + k]);
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    if (static_cast<size_t>(i) < carriedCount) {
      aliases[node.output(i)] = carried[i];
      continue;
    }
    const std::vector<std::string> &values = scans[i - carriedCount];
    if (values.empty())
      throw Unsupported{"Loop runs no iteration, so its scan output '" +
                        node.output(i) + "' has no known shape"};
    stackAlong(*this, owner, values, 0, node.output(i));
  }
}

/// Scan, unrolled over its scan inputs' static length: each iteration's
/// body reads the state and one slice of every scan input (along its axis,
/// from the end where its direction is 1); the scan outputs stack each
/// iteration's values along their axes (last first where reversed). Scan-8
/// has a batch dim first on every input and output, each batch element
/// scanned on its own, and sequence_lens (which must be the full length).
void OnnxConverter::convertScan(const onnx::NodeProto &node) {
  const bool batched = opset < 9;
  const std::set<std::string> known =
      batched ? std::set<std::string>{"body", "num_scan_inputs", "directions"}
              : std::set<std::string>{"body",
                                      "num_scan_inputs",
                                      "scan_input_axes",
                                      "scan_input_directions",
                                      "scan_output_axes",
                                      "scan_output_directions"};
  const onnx::GraphProto &body = subgraphAttr(node, "body", known);
  int64_t scanInputCount = -1;
  std::vector<int64_t> inputAxes, inputDirections, outputAxes, outputDirections;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    std::vector<int64_t> ints(attr.ints().begin(), attr.ints().end());
    if (attr.name() == "num_scan_inputs")
      scanInputCount = attr.i();
    else if (attr.name() == "scan_input_axes")
      inputAxes = ints;
    else if (attr.name() == "scan_input_directions" ||
             attr.name() == "directions")
      inputDirections = ints;
    else if (attr.name() == "scan_output_axes")
      outputAxes = ints;
    else if (attr.name() == "scan_output_directions")
      outputDirections = ints;
  }
  const int first = batched ? 1 : 0; // Scan-8's sequence_lens
  const int64_t inputCount = node.input_size() - first;
  if (scanInputCount < 1 || scanInputCount > inputCount)
    throw Unsupported{"Scan's num_scan_inputs must be 1 to the number of its "
                      "inputs"};
  const int64_t stateCount = inputCount - scanInputCount;
  const int64_t scanOutputCount = body.output_size() - stateCount;
  if (body.input_size() != static_cast<int>(inputCount))
    throw Unsupported{"Scan's body takes " + std::to_string(body.input_size()) +
                      " inputs but is given " + std::to_string(inputCount) +
                      " (" + std::to_string(stateCount) + " states, " +
                      std::to_string(scanInputCount) + " scan slices)"};
  if (scanOutputCount < 0 || node.output_size() > body.output_size())
    throw Unsupported{
        "Scan's body gives " + std::to_string(body.output_size()) +
        " outputs, fewer than its " + std::to_string(stateCount) +
        " states or Scan's " + std::to_string(node.output_size()) + " outputs"};
  auto listOf = [](std::vector<int64_t> given, int64_t count,
                   const char *name) {
    if (given.empty())
      given.assign(count, 0);
    if (static_cast<int64_t>(given.size()) != count)
      throw Unsupported{std::string("Scan's ") + name + " has " +
                        std::to_string(given.size()) + " entries for " +
                        std::to_string(count) + " values"};
    return given;
  };
  inputAxes = listOf(inputAxes, scanInputCount, "scan_input_axes");
  inputDirections =
      listOf(inputDirections, scanInputCount, "scan_input_directions");
  outputAxes = listOf(outputAxes, scanOutputCount, "scan_output_axes");
  outputDirections =
      listOf(outputDirections, scanOutputCount, "scan_output_directions");
  const std::string scope = newScope(node);
  GraphNode owner;
  owner.name = scope;
  owner.outputs = {scope};
  std::vector<std::string> inputs;
  std::vector<Shape> shapes;
  for (int64_t i = 0; i < inputCount; ++i) {
    if (node.input(first + i).empty())
      throw Unsupported{"Scan's input " + std::to_string(first + i) +
                        " is missing"};
    inputs.push_back(resolve(node.input(first + i)));
    shapes.push_back(requireShape(inputs.back(), "Scan"));
    if (batched && shapes.back().empty())
      throw Unsupported{"Scan-8's inputs have a batch dim first"};
  }
  const int64_t batch = batched ? shapes[0][0] : 1;
  for (const Shape &shape : shapes)
    if (batched && shape[0] != batch)
      throw Unsupported{"Scan-8's inputs have different batch sizes (" +
                        std::to_string(batch) + " and " +
                        std::to_string(shape[0]) + ")"};
  if (batch == 0)
    throw Unsupported{"Scan-8's batch is empty"};
  // The scan axis of each scan input, within a batch element.
  int64_t length = -1;
  for (int64_t j = 0; j < scanInputCount; ++j) {
    const Shape &shape = shapes[stateCount + j];
    int64_t rank = static_cast<int64_t>(shape.size()) - (batched ? 1 : 0);
    int64_t axis = inputAxes[j] < 0 ? inputAxes[j] + rank : inputAxes[j];
    if (axis < 0 || axis >= rank)
      throw Unsupported{"Scan's scan input " + std::to_string(j) +
                        " has no axis " + std::to_string(inputAxes[j])};
    inputAxes[j] = axis;
    int64_t dim = shape[axis + (batched ? 1 : 0)];
    if (length >= 0 && dim != length)
      throw Unsupported{"Scan's scan inputs have different lengths (" +
                        std::to_string(length) + " and " + std::to_string(dim) +
                        ")"};
    length = dim;
  }
  if (batched && node.input_size() > 0 && !node.input(0).empty()) {
    const Tensor &lengths =
        constantValue(resolve(node.input(0)), "Scan's sequence_lens");
    for (int64_t value : integersOf(lengths, "Scan's sequence_lens"))
      if (value != length)
        throw Unsupported{"Scan's sequence_lens must all be the full length " +
                          std::to_string(length)};
  }
  if (length > 0 && batch > kMaxLoopIterations / length)
    throw Unsupported{"Scan runs " + std::to_string(batch) + " x " +
                      std::to_string(length) + " steps, more than the " +
                      std::to_string(kMaxLoopIterations) + " fusec unrolls"};
  if (length == 0 && scanOutputCount > 0)
    throw Unsupported{"Scan's scan inputs are empty, so its scan outputs "
                      "have no known shape"};
  // Per batch element: the final states and each scan output's values.
  std::vector<std::vector<std::string>> finalStates(stateCount),
      scanned(scanOutputCount);
  for (int64_t b = 0; b < batch; ++b) {
    const std::string batchTag = batched ? "b" + std::to_string(b) + "_" : "";
    std::vector<std::string> states;
    for (int64_t i = 0; i < stateCount; ++i)
      states.push_back(batched
                           ? sliceAt(*this, owner, inputs[i], shapes[i], 0, b,
                                     batchTag + "state" + std::to_string(i))
                           : inputs[i]);
    std::vector<std::string> sequences;
    std::vector<Shape> sequenceShapes;
    for (int64_t j = 0; j < scanInputCount; ++j) {
      const Shape &shape = shapes[stateCount + j];
      sequences.push_back(
          batched ? sliceAt(*this, owner, inputs[stateCount + j], shape, 0, b,
                            batchTag + "scan" + std::to_string(j))
                  : inputs[stateCount + j]);
      sequenceShapes.push_back(batched ? Shape(shape.begin() + 1, shape.end())
                                       : shape);
    }
    std::vector<std::vector<std::string>> steps(scanOutputCount);
    for (int64_t t = 0; t < length; ++t) {
      chargeUnrolling(1 + scanInputCount + scanOutputCount);
      const std::string at = batchTag + std::to_string(t);
      std::vector<std::string> bodyInputs = states;
      for (int64_t j = 0; j < scanInputCount; ++j) {
        int64_t index = inputDirections[j] ? length - 1 - t : t;
        bodyInputs.push_back(sliceAt(*this, owner, sequences[j],
                                     sequenceShapes[j], inputAxes[j], index,
                                     at + "_in" + std::to_string(j)));
      }
      std::vector<std::string> outputs = convertSubgraph(
          body, scope + "/" + at, bodyInputs, "Scan's body (step " + at + ")");
      std::copy(outputs.begin(), outputs.begin() + stateCount, states.begin());
      for (int64_t k = 0; k < scanOutputCount; ++k)
        steps[k].push_back(outputs[stateCount + k]);
    }
    for (int64_t i = 0; i < stateCount; ++i)
      finalStates[i].push_back(states[i]);
    for (int64_t k = 0; k < scanOutputCount; ++k) {
      if (outputDirections[k])
        std::reverse(steps[k].begin(), steps[k].end());
      int64_t rank =
          static_cast<int64_t>(requireShape(steps[k][0], "Scan").size()) + 1;
      int64_t axis = outputAxes[k] < 0 ? outputAxes[k] + rank : outputAxes[k];
      if (axis < 0 || axis >= rank)
        throw Unsupported{"Scan's scan output " + std::to_string(k) +
                          " has no axis " + std::to_string(outputAxes[k])};
      if (stateCount + k >= node.output_size() ||
          node.output(stateCount + k).empty())
        continue; // an output left out
      std::string stacked =
          batched ? scope + "_" + batchTag + "out" + std::to_string(k)
                  : node.output(stateCount + k);
      stackAlong(*this, owner, steps[k], axis, stacked);
      scanned[k].push_back(stacked);
    }
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    bool isState = i < stateCount;
    const std::vector<std::string> &values =
        isState ? finalStates[i] : scanned[i - stateCount];
    if (!batched) {
      if (isState)
        aliases[node.output(i)] = values[0];
      continue;
    }
    stackAlong(*this, owner, values, 0, node.output(i));
  }
}

onnx::AttributeProto intAttribute(const std::string &name, int64_t value) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::INT);
  attr.set_i(value);
  return attr;
}

std::string OnnxConverter::expand(const onnx::NodeProto &owner,
                                  const std::string &op,
                                  const std::vector<std::string> &inputs,
                                  std::vector<onnx::AttributeProto> attrs,
                                  const std::string &output) {
  onnx::NodeProto node;
  node.set_op_type(op);
  node.set_name(owner.name());
  for (const std::string &input : inputs)
    node.add_input(input);
  node.add_output(!output.empty() ? output
                                  : owner.output(0) + "_" + op + "_" +
                                        std::to_string(expandedNodes++));
  for (onnx::AttributeProto &attr : attrs)
    *node.add_attribute() = std::move(attr);
  convertOrFold(node);
  return node.output(0);
}

std::string OnnxConverter::expandConstant(const onnx::NodeProto &owner,
                                          Tensor value) {
  std::string name =
      owner.output(0) + "_constant_" + std::to_string(expandedNodes++);
  addConstant(name, std::move(value));
  return name;
}

/// CausalConvWithState (opset 27), as ONNX's function defines it: the past
/// state (zeros where absent) before the input along the length, a
/// depthwise Conv over that (SiLU after it where activation asks), and the
/// last k - 1 positions of the padded sequence as the present state.
void OnnxConverter::convertCausalConvWithState(const onnx::NodeProto &node) {
  std::string activation = "none";
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name() != "activation")
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
    activation = attr.s();
  }
  if (activation != "none" && activation != "silu" && activation != "swish")
    throw Unsupported{"activation '" + activation +
                      "' is not one of silu, swish, none"};
  if (node.input_size() < 2 || node.input(0).empty() || node.input(1).empty())
    throw Unsupported{"CausalConvWithState takes input and weight"};
  auto optionalInput = [&](int index) {
    return node.input_size() > index ? resolve(node.input(index))
                                     : std::string();
  };
  const std::string x = resolve(node.input(0)), weight = resolve(node.input(1)),
                    bias = optionalInput(2), past = optionalInput(3);
  const Shape xShape = requireShape(x, "CausalConvWithState"),
              wShape = requireShape(weight, "CausalConvWithState");
  const DType dtype = requireDType(x, "CausalConvWithState");
  if (xShape.size() != 3 || wShape.size() != 3 || wShape[0] != xShape[1] ||
      wShape[1] != 1 || wShape[2] < 1)
    throw Unsupported{"CausalConvWithState takes input [B, C, L] and weight "
                      "[C, 1, k], not [" +
                      formatShape(xShape) + "] and [" + formatShape(wShape) +
                      "]"};
  const int64_t channels = xShape[1], length = xShape[2],
                carried = wShape[2] - 1;
  const Shape stateShape = {xShape[0], channels, carried};
  std::string state = past;
  if (state.empty()) {
    state = expandConstant(node, Tensor(dtype, stateShape));
  } else if (requireShape(state, "CausalConvWithState") != stateShape) {
    throw Unsupported{
        "past_state must be [" + formatShape(stateShape) + "], not [" +
        formatShape(requireShape(state, "CausalConvWithState")) + "]"};
  }
  std::string padded =
      expand(node, "Concat", {state, x}, {intAttribute("axis", 2)});
  std::vector<std::string> convInputs = {padded, weight};
  if (!bias.empty())
    convInputs.push_back(bias);
  bool activated = activation != "none";
  std::string convolved =
      expand(node, "Conv", convInputs, {intAttribute("group", channels)},
             activated ? "" : node.output(0));
  if (activated)
    expand(node, "Mul", {convolved, expand(node, "Sigmoid", {convolved})}, {},
           node.output(0));
  if (node.output_size() > 1 && !node.output(1).empty()) {
    auto positions = [&](int64_t value) {
      Tensor tensor(DType::I64, {1});
      tensor.set(0, static_cast<double>(value));
      return expandConstant(node, std::move(tensor));
    };
    expand(
        node, "Slice",
        {padded, positions(length), positions(length + carried), positions(2)},
        {}, node.output(1));
  }
}

/// LinearAttention (opset 27), as ONNX's reference computes it: heads
/// unpacked and widened to f32, then the recurrence unrolled over the
/// sequence (fusec's shapes are static): per token the state decays by
/// exp(decay) (gated rules), the value is corrected by what the state
/// already holds for the key, times beta (delta rules), the state gains
/// key x value, and the output is scale * query . state, each KV head's
/// state read by its group of query heads. The output converts back to the
/// query's dtype, the state to past_state's (the query's without one).
void OnnxConverter::convertLinearAttention(const onnx::NodeProto &node) {
  std::string rule = "gated_delta";
  int64_t queryHeads = 0, kvHeads = 0;
  double scale = 0;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name() == "update_rule")
      rule = attr.s();
    else if (attr.name() == "q_num_heads")
      queryHeads = attr.i();
    else if (attr.name() == "kv_num_heads")
      kvHeads = attr.i();
    else if (attr.name() == "scale")
      scale = attr.f();
    else if (attr.name() != "chunk_size") // a tuning hint
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
  }
  const bool gated = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  if (!gated && !delta && rule != "linear")
    throw Unsupported{"update_rule '" + rule +
                      "' is not one of linear, gated, delta, gated_delta"};
  if (queryHeads < 1 || kvHeads < 1 || queryHeads % kvHeads != 0)
    throw Unsupported{"q_num_heads (" + std::to_string(queryHeads) +
                      ") must be a positive multiple of kv_num_heads (" +
                      std::to_string(kvHeads) + ")"};
  auto input = [&](int index) {
    return node.input_size() > index ? resolve(node.input(index))
                                     : std::string();
  };
  const std::string query = input(0), key = input(1), value = input(2),
                    past = input(3), decay = input(4), beta = input(5);
  if (query.empty() || key.empty() || value.empty())
    throw Unsupported{"LinearAttention takes query, key and value"};
  if (gated != !decay.empty() || delta != !beta.empty())
    throw Unsupported{"update_rule '" + rule + "' " +
                      (gated ? "needs" : "takes no") + " decay and " +
                      (delta ? "needs" : "takes no") + " beta"};
  const Shape qShape = requireShape(query, "LinearAttention"),
              kShape = requireShape(key, "LinearAttention"),
              vShape = requireShape(value, "LinearAttention");
  if (qShape.size() != 3 || kShape.size() != 3 || vShape.size() != 3 ||
      kShape[0] != qShape[0] || vShape[0] != qShape[0] ||
      kShape[1] != qShape[1] || vShape[1] != qShape[1] ||
      qShape[2] % queryHeads != 0 || vShape[2] % kvHeads != 0 ||
      kShape[2] != qShape[2] / queryHeads * kvHeads)
    throw Unsupported{"query, key and value must be [B, T, heads * dim] with "
                      "the heads given, not [" +
                      formatShape(qShape) + "], [" + formatShape(kShape) +
                      "] and [" + formatShape(vShape) + "]"};
  const int64_t batch = qShape[0], length = qShape[1],
                keyDim = qShape[2] / queryHeads, valueDim = vShape[2] / kvHeads,
                group = queryHeads / kvHeads;
  if (length > kMaxLoopIterations)
    throw Unsupported{"LinearAttention over " + std::to_string(length) +
                      " tokens is more than the " +
                      std::to_string(kMaxLoopIterations) + " fusec unrolls"};
  const DType outputType = requireDType(query, "LinearAttention");
  auto ints = [&](std::vector<int64_t> values) {
    Tensor tensor(DType::I64, {static_cast<int64_t>(values.size())});
    for (size_t i = 0; i < values.size(); ++i)
      tensor.set(i, static_cast<double>(values[i]));
    return expandConstant(node, std::move(tensor));
  };
  auto toF32 = [&](const std::string &x) {
    return expand(node, "Cast", {x},
                  {intAttribute("to", onnxTypeOf(DType::F32))});
  };
  auto permute = [&](const std::string &x, std::vector<int64_t> perm) {
    onnx::AttributeProto attr;
    attr.set_name("perm");
    attr.set_type(onnx::AttributeProto::INTS);
    for (int64_t axis : perm)
      attr.add_ints(axis);
    return expand(node, "Transpose", {x}, {attr});
  };
  // [B, T, heads * dim] -> [B, heads, T, dim], in f32.
  auto unpack = [&](const std::string &x, int64_t heads, int64_t dim) {
    return toF32(
        permute(expand(node, "Reshape", {x, ints({batch, length, heads, dim})}),
                {0, 2, 1, 3}));
  };
  const std::string q4 = unpack(query, queryHeads, keyDim),
                    k4 = unpack(key, kvHeads, keyDim),
                    v4 = unpack(value, kvHeads, valueDim);
  std::string decay4, beta4;
  if (gated) {
    Shape shape = requireShape(decay, "LinearAttention");
    if (shape.size() != 3 || shape[0] != batch || shape[1] != length ||
        (shape[2] != kvHeads && shape[2] != kvHeads * keyDim))
      throw Unsupported{"decay must be [B, T, kv_num_heads] or [B, T, "
                        "kv_num_heads * d_k], not [" +
                        formatShape(shape) + "]"};
    decay4 = unpack(decay, kvHeads, shape[2] / kvHeads);
  }
  if (delta) {
    Shape shape = requireShape(beta, "LinearAttention");
    if (shape.size() != 3 || shape[0] != batch || shape[1] != length ||
        (shape[2] != kvHeads && shape[2] != 1))
      throw Unsupported{"beta must be [B, T, kv_num_heads] or [B, T, 1], "
                        "not [" +
                        formatShape(shape) + "]"};
    beta4 = unpack(beta, shape[2], 1);
  }
  const Shape stateShape = {batch, kvHeads, keyDim, valueDim};
  DType stateType = outputType;
  std::string state;
  if (past.empty()) {
    state = expandConstant(node, Tensor(DType::F32, stateShape));
  } else {
    if (requireShape(past, "LinearAttention") != stateShape)
      throw Unsupported{
          "past_state must be [" + formatShape(stateShape) + "], not [" +
          formatShape(requireShape(past, "LinearAttention")) + "]"};
    stateType = requireDType(past, "LinearAttention");
    state = toF32(past);
  }
  const double scaleValue =
      scale == 0 ? 1.0 / std::sqrt(static_cast<double>(keyDim)) : scale;
  const std::string scaleConstant =
      expandConstant(node, scalarTensor(DType::F32, scaleValue));
  const std::string lastAxis = ints({-1}), beforeLastAxis = ints({-2}),
                    keyAxis = ints({2});
  auto token = [&](const std::string &x, int64_t t) {
    return expand(node, "Gather",
                  {x, expandConstant(node, scalarTensor(DType::I64, t))},
                  {intAttribute("axis", 2)});
  };
  auto sumOverKeys = [&](const std::string &x) {
    return expand(node, "ReduceSum", {x, keyAxis},
                  {intAttribute("keepdims", 0)});
  };
  std::vector<std::string> outputs;
  for (int64_t t = 0; t < length; ++t) {
    chargeUnrolling(20); // the nodes of one token's update
    std::string k = token(k4, t), v = token(v4, t);
    if (gated)
      state = expand(
          node, "Mul",
          {state, expand(node, "Unsqueeze",
                         {expand(node, "Exp", {token(decay4, t)}), lastAxis})});
    std::string column = expand(node, "Unsqueeze", {k, lastAxis});
    if (delta) {
      std::string held = sumOverKeys(expand(node, "Mul", {state, column}));
      v = expand(node, "Mul",
                 {token(beta4, t), expand(node, "Sub", {v, held})});
    }
    state = expand(node, "Add",
                   {state, expand(node, "Mul",
                                  {column, expand(node, "Unsqueeze",
                                                  {v, beforeLastAxis})})});
    std::string read = state;
    if (group > 1)
      read = expand(node, "Reshape",
                    {expand(node, "Expand",
                            {expand(node, "Unsqueeze", {state, keyAxis}),
                             ints({batch, kvHeads, group, keyDim, valueDim})}),
                     ints({batch, queryHeads, keyDim, valueDim})});
    std::string attended = sumOverKeys(
        expand(node, "Mul",
               {expand(node, "Unsqueeze", {token(q4, t), lastAxis}), read}));
    outputs.push_back(
        expand(node, "Unsqueeze",
               {expand(node, "Mul", {scaleConstant, attended}), keyAxis}));
  }
  std::string stacked = outputs.size() == 1 ? outputs[0]
                                            : expand(node, "Concat", outputs,
                                                     {intAttribute("axis", 2)});
  expand(node, "Cast",
         {expand(node, "Reshape",
                 {permute(stacked, {0, 2, 1, 3}),
                  ints({batch, length, queryHeads * valueDim})})},
         {intAttribute("to", onnxTypeOf(outputType))}, node.output(0));
  if (node.output_size() > 1 && !node.output(1).empty())
    expand(node, "Cast", {state}, {intAttribute("to", onnxTypeOf(stateType))},
           node.output(1));
}

/// Dropout at inference (training_mode absent or false, or a ratio of 0):
/// the identity, and a mask of all true. Training mode drops random
/// elements, which fusec does not compile.
void OnnxConverter::convertDropout(const onnx::NodeProto &node) {
  // Opset 10's Dropout (read up to opset 11) has a ratio attribute; from
  // opset 12, ratio and training_mode are inputs and seed an attribute.
  const char *attrName = opset < 12 ? "ratio" : "seed";
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() != attrName)
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
  bool training = false;
  if (opset >= 12 && node.input_size() > 2 && !node.input(2).empty()) {
    const Tensor &mode =
        constantValue(resolve(node.input(2)), "input 2 (training_mode)");
    if (mode.numElements() != 1)
      throw Unsupported{"training_mode must be a single bool"};
    training = mode.at(0) != 0;
  }
  if (training) {
    double ratio = 0.5;
    if (node.input_size() > 1 && !node.input(1).empty()) {
      const Tensor &value =
          constantValue(resolve(node.input(1)), "input 1 (ratio)");
      if (value.numElements() != 1 || !isFloat(value.dtype))
        throw Unsupported{"ratio must be a single float"};
      ratio = value.at(0);
    }
    if (ratio != 0) {
      std::ostringstream message;
      message << "training_mode is true with ratio " << ratio
              << ": Dropout then zeroes random elements, and fusec compiles "
                 "inference only";
      throw Unsupported{message.str()};
    }
  }
  std::string input = resolve(node.input(0));
  aliases[node.output(0)] = input;
  if (node.output_size() < 2 || node.output(1).empty())
    return;
  Shape shape = requireShape(input, "Dropout's mask");
  std::string value = node.output(1) + "_value";
  addConstant(value, scalarTensor(DType::I1, 1));
  GraphNode mask;
  mask.name = (node.name().empty() ? node.output(0) : node.name()) + "_mask";
  mask.op = "expand";
  mask.inputs = {value};
  mask.outputs = {node.output(1)};
  mask.attrs["shape"] = std::vector<int64_t>(shape.begin(), shape.end());
  graph.nodes.push_back(std::move(mask));
}

const std::vector<std::pair<const char *, OnnxConverter::SpecialConvert>> &
OnnxConverter::specialOps() {
  static const std::vector<std::pair<const char *, SpecialConvert>> ops = {
      {"Constant", &OnnxConverter::convertConstant},
      {"ConstantOfShape", &OnnxConverter::convertConstantOfShape},
      {"Range", &OnnxConverter::convertRange},
      {"Split", &OnnxConverter::convertSplit},
      {"Pow", &OnnxConverter::convertPow},
      {"Identity", &OnnxConverter::convertIdentity},
      {"Shape", &OnnxConverter::convertShapeOrSize},
      {"Size", &OnnxConverter::convertShapeOrSize},
      {"Dropout", &OnnxConverter::convertDropout},
      {"If", &OnnxConverter::convertIf},
      {"Loop", &OnnxConverter::convertLoop},
      {"Scan", &OnnxConverter::convertScan},
      {"CausalConvWithState", &OnnxConverter::convertCausalConvWithState},
      {"LinearAttention", &OnnxConverter::convertLinearAttention}};
  return ops;
}

bool OnnxConverter::isVariadic(const std::string &opType) {
  return opType == "Max" || opType == "Min" || opType == "Sum";
}

/// One input is the value itself; more are combined left to right, the
/// intermediate results named after the node's output.
void OnnxConverter::convertVariadic(const onnx::NodeProto &node,
                                    const GraphNode &pattern) {
  if (node.input_size() == 0 || node.attribute_size() != 0)
    throw Unsupported{node.op_type() + " needs one or more inputs and no "
                                       "attributes"};
  if (node.input_size() == 1) {
    aliases[node.output(0)] = resolve(node.input(0));
    return;
  }
  std::string partial = resolve(node.input(0));
  for (int i = 1; i < node.input_size(); ++i) {
    GraphNode step = pattern;
    step.name =
        pattern.name +
        (i + 1 < node.input_size() ? "_" + std::to_string(i) : std::string());
    step.inputs = {partial, resolve(node.input(i))};
    step.outputs = {i + 1 < node.input_size()
                        ? node.output(0) + "_partial_" + std::to_string(i)
                        : node.output(0)};
    partial = step.outputs[0];
    graph.nodes.push_back(std::move(step));
  }
}

Graph OnnxConverter::convert(const onnx::ModelProto &model) {
  opset = defaultOpset(model);
  if (opset < kOldestOpset || opset > kMaxOpset)
    throw Error(path + ": error: the model uses opset " +
                std::to_string(opset) + " of the default domain; fusec reads " +
                std::to_string(kOldestOpset) + " to " +
                std::to_string(kMaxOpset));
  const onnx::GraphProto &proto = model.graph();
  graph.name = proto.name().empty() ? "main" : proto.name();
  graph.sourcePath = path;
  for (const onnx::TensorProto &initializer : proto.initializer()) {
    try {
      addConstant(initializer.name(), tensorFromProto(initializer, modelDir));
    } catch (const Unsupported &unsupported) {
      errors.push_back(path + ": initializer '" + initializer.name() +
                       "': error: " + unsupported.reason);
    }
  }
  boundNames = namesUsedAsConstants(proto);
  for (const onnx::ValueInfoProto &input : proto.input()) {
    if (constants.count(input.name()))
      continue; // old IRs list initializers as inputs too
    auto value = options.staticInputValues.find(input.name());
    if (value != options.staticInputValues.end() &&
        boundNames.count(input.name())) {
      addConstant(input.name(), value->second);
      continue;
    }
    const onnx::TypeProto &type = input.type();
    std::optional<DType> dtype =
        type.has_tensor_type() ? dtypeOfOnnx(type.tensor_type().elem_type())
                               : std::nullopt;
    if (!dtype) {
      std::string what =
          type.has_tensor_type()
              ? "is a tensor of " +
                    onnxTypeName(type.tensor_type().elem_type()) +
                    ", a dtype fusec does not have"
          : type.has_sequence_type() ? "is a sequence, not a tensor"
          : type.has_optional_type() ? "is an optional, not a tensor"
          : type.has_map_type()      ? "is a map, not a tensor"
                                     : "is not a tensor";
      errors.push_back(path + ": input '" + input.name() + "': error: " + what);
      continue;
    }
    Shape shape;
    auto given = options.inputShapes.find(input.name());
    if (given != options.inputShapes.end()) {
      shape = given->second;
    } else {
      for (const onnx::TensorShapeProto::Dimension &dim :
           type.tensor_type().shape().dim()) {
        if (!dim.has_dim_value()) {
          errors.push_back(path + ": input '" + input.name() +
                           "': error: dim '" + dim.dim_param() +
                           "' is symbolic; fix the shape with " +
                           "--input-shape " + input.name() + "=D0,D1,...");
          break;
        }
        shape.push_back(dim.dim_value());
      }
    }
    graph.inputs.push_back({input.name(), *dtype, shape});
  }
  inferShapes(model);
  for (const onnx::NodeProto &node : proto.node()) {
    try {
      if (foldShapeNode(node) || foldToConstants(node))
        continue;
      convertNode(node);
      if (std::any_of(node.output().begin(), node.output().end(),
                      [&](const std::string &output) {
                        return uninferredOutputs.count(output) &&
                               shapeOf(output) && dtypeOf(output);
                      }))
        inferShapes(model);
    } catch (const Unsupported &unsupported) {
      errors.push_back(path + ": node '" + node.name() + "' (" +
                       node.op_type() + ", opset " + std::to_string(opset) +
                       "): error: " + unsupported.reason);
    } catch (const std::bad_variant_access &) {
      // An attribute read as another type than the model gave it (a float
      // `axis`, a string `to`, ...): fuzz-onnx.
      errors.push_back(path + ": node '" + node.name() + "' (" +
                       node.op_type() + ", opset " + std::to_string(opset) +
                       "): error: an attribute has the wrong type");
    } catch (const std::length_error &) {
      // A constant sized by dims declared far past any data (fuzz-onnx).
      errors.push_back(path + ": node '" + node.name() + "' (" +
                       node.op_type() + ", opset " + std::to_string(opset) +
                       "): error: a constant it needs would be too large");
    } catch (const std::out_of_range &) {
      // A converter reading an input, output or dim the node lacks.
      errors.push_back(path + ": node '" + node.name() + "' (" +
                       node.op_type() + ", opset " + std::to_string(opset) +
                       "): error: the node lacks an input or output its op "
                       "needs");
    }
  }
  if (!errors.empty()) {
    std::string message;
    for (const std::string &error : errors)
      message += (message.empty() ? "" : "\n") + error;
    throw Error(message);
  }
  for (const onnx::ValueInfoProto &output : proto.output()) {
    graph.outputs.push_back(resolve(output.name()));
    graph.outputNames.push_back(output.name());
  }
  return std::move(graph);
}

void OnnxConverter::broadcastFromAxis(GraphNode &node, int64_t axis) {
  if (node.inputs.size() < 2 || node.inputs[1].empty())
    throw Unsupported{"broadcasting from an axis needs a second operand"};
  const Shape first = requireShape(node.inputs[0], node.name),
              second = requireShape(node.inputs[1], node.name);
  const int64_t rank = first.size(), count = second.size();
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis + count > rank)
    throw Unsupported{"broadcast axis " + std::to_string(axis) +
                      " leaves no room for the second operand's " +
                      std::to_string(count) + " dims in rank " +
                      std::to_string(rank)};
  Shape aligned(rank, 1);
  for (int64_t i = 0; i < count; ++i) {
    if (second[i] != first[axis + i] && second[i] != 1)
      throw Unsupported{"the second operand's dims [" + formatShape(second) +
                        "] do not match the first's [" + formatShape(first) +
                        "] from axis " + std::to_string(axis)};
    aligned[axis + i] = second[i];
  }
  node.inputs[1] = viewStep(*this, node, node.inputs[1], aligned, "aligned");
}

void OnnxConverter::convertNode(const onnx::NodeProto &node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    throw Unsupported{"ops of domain '" + node.domain() +
                      "' are not supported"};
  // The converters index output 0 and some ops' fixed inputs: arity is
  // checked before any of them does (protobuf does not).
  static const std::map<std::string, int> kMinInputs = {
      {"ConstantOfShape", 1}, {"Range", 3},
      {"Split", 1},           {"Pow", 2},
      {"Identity", 1},        {"LayerNormalization", 2},
      {"Shape", 1},           {"Size", 1},
      {"Dropout", 1}};
  auto minInputs = kMinInputs.find(node.op_type());
  if (node.output_size() < 1 ||
      (minInputs != kMinInputs.end() && node.input_size() < minInputs->second))
    throw Unsupported{node.op_type() + " has " +
                      std::to_string(node.input_size()) + " inputs and " +
                      std::to_string(node.output_size()) + " outputs: too few"};
  if (std::string problem = opsetVersionProblem(node.op_type(), opset);
      !problem.empty())
    throw Unsupported{problem};
  for (const onnx::AttributeProto &attr : node.attribute())
    if (std::string problem =
            attributeOpsetProblem(node.op_type(), attr.name(), opset);
        !problem.empty())
      throw Unsupported{problem};
  for (const auto &[opType, convert] : specialOps())
    if (node.op_type() == opType) {
      (this->*convert)(node);
      return;
    }
  const std::vector<OnnxOp> &table = onnxOps();
  auto row = std::find_if(table.begin(), table.end(), [&](const OnnxOp &op) {
    return node.op_type() == op.onnxName;
  });
  if (row == table.end())
    throw Unsupported{"op " + node.op_type() + " is not supported"};
  // Every op of the table reads its first input.
  if (node.input_size() < 1 || node.input(0).empty())
    throw Unsupported{node.op_type() + "'s input 0 is missing"};
  if (opset < row->sinceOpset)
    throw Unsupported{node.op_type() + " is defined from opset " +
                      std::to_string(row->sinceOpset) + " on"};
  GraphNode graphNode;
  graphNode.name = node.name().empty() ? node.output(0) : node.name();
  graphNode.op = row->graphOp;
  if (isVariadic(node.op_type()) && node.input_size() != 2) {
    convertVariadic(node, graphNode);
    return;
  }
  // Before opset 7 the binary ops and Gemm broadcast only with broadcast =
  // 1: the second operand (Gemm's C) matched to the first's trailing dims,
  // which NumPy's broadcasting does too, or to the dims from `axis` on,
  // which it does not.
  const onnx::OpSchema *legacy =
      opset < 7 ? onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "")
                : nullptr;
  bool legacyBroadcast = legacy && legacy->attributes().count("broadcast");
  std::optional<int64_t> legacyAxis;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (legacyBroadcast && attr.name() == "axis") {
      legacyAxis = attr.i();
      continue;
    }
    if (legacyBroadcast && attr.name() == "broadcast")
      continue;
    if (std::find(row->attrs.begin(), row->attrs.end(), attr.name()) ==
        row->attrs.end())
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
    // Lists of floats and strings (Upsample-7's scales, the recurrent ops'
    // activations) are read by the op's converter from the node itself.
    if (attr.type() == onnx::AttributeProto::FLOATS ||
        attr.type() == onnx::AttributeProto::STRINGS)
      continue;
    graphNode.attrs[attr.name()] = attrValueOf(attr);
  }
  // A float attribute left out takes the spec's default, which is a float:
  // LeakyRelu's alpha is 0.01f (0.0099999997764825821), not the double
  // 0.01 the graph op would assume, where the op computes in f64.
  if (const onnx::OpSchema *schema =
          onnx::OpSchemaRegistry::Schema(node.op_type(), opset, ""))
    for (const std::string &name : row->attrs) {
      auto attr = schema->attributes().find(name);
      if (!graphNode.attrs.count(name) && attr != schema->attributes().end() &&
          attr->second.default_value.type() == onnx::AttributeProto::FLOAT)
        graphNode.attrs[name] = attrValueOf(attr->second.default_value);
    }
  for (int i = 0; i < node.input_size(); ++i) {
    auto constantInput =
        std::find_if(row->constantInputs.begin(), row->constantInputs.end(),
                     [&](const OnnxOp::ConstantInput &input) {
                       return input.index == static_cast<size_t>(i) &&
                              opset >= input.sinceOpset;
                     });
    if (constantInput == row->constantInputs.end()) {
      graphNode.inputs.push_back(
          node.input(i).empty() ? std::string() : resolve(node.input(i)));
      continue;
    }
    if (node.input(i).empty())
      continue; // an optional bound left out
    if (std::string(constantInput->attr) == "constant_value" &&
        !constants.count(resolve(node.input(i)))) {
      // A pad value computed at run time: padValue selects it.
      graphNode.inputs.push_back(resolve(node.input(i)));
      continue;
    }
    std::string what =
        "input " + std::to_string(i) + " (" + constantInput->attr + ")";
    const Tensor &value = constantValue(resolve(node.input(i)), what);
    if (std::string(constantInput->attr) == "constant_value" &&
        (value.dtype == DType::F32 || value.dtype == DType::F64 ||
         value.dtype == DType::F16 || value.dtype == DType::BF16))
      graphNode.attrs[constantInput->attr] =
          value.numElements() ? value.at(0) : 0.0;
    else
      graphNode.attrs[constantInput->attr] = integersOf(value, what);
  }
  for (const std::string &output : node.output())
    graphNode.outputs.push_back(output);
  if (legacyAxis)
    broadcastFromAxis(graphNode, *legacyAxis);
  if (row->convert)
    row->convert(*this, node, graphNode);
  if (graphNode.outputs.size() != 1)
    throw Unsupported{"only one output is supported"};
  graph.nodes.push_back(std::move(graphNode));
}

} // namespace

Graph readOnnxGraph(const std::string &path, const OnnxOptions &options) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": error: cannot open the model file");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in))
    throw Error(path + ": error: not a valid ONNX model (protobuf parse "
                       "failed)");
  OnnxConverter converter(path, options);
  return converter.convert(model);
}

OnnxModelSummary summarizeOnnxModel(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto model;
  if (!in || !model.ParseFromIstream(&in))
    throw Error(path + ": error: not a valid ONNX model (protobuf parse "
                       "failed)");
  std::set<std::string> initializers;
  for (const onnx::TensorProto &initializer : model.graph().initializer())
    initializers.insert(initializer.name());
  OnnxModelSummary summary;
  summary.opset = defaultOpset(model);
  summary.nodeCount = model.graph().node_size();
  summary.opsetSupported =
      summary.opset >= kOldestOpset && summary.opset <= kMaxOpset;
  auto dtypeOfValue = [](const onnx::ValueInfoProto &value) {
    return value.type().has_tensor_type()
               ? dtypeOfOnnx(value.type().tensor_type().elem_type())
               : std::nullopt;
  };
  for (const onnx::ValueInfoProto &input : model.graph().input())
    if (!initializers.count(input.name())) {
      summary.inputNames.push_back(input.name());
      summary.inputTypes.push_back(dtypeOfValue(input));
      std::optional<std::vector<int64_t>> dims;
      if (input.type().tensor_type().has_shape()) {
        dims.emplace();
        for (const auto &dim : input.type().tensor_type().shape().dim())
          dims->push_back(dim.has_dim_value() ? dim.dim_value() : -1);
      }
      summary.inputDims.push_back(dims);
    }
  for (const onnx::ValueInfoProto &output : model.graph().output())
    summary.outputTypes.push_back(dtypeOfValue(output));
  for (const onnx::NodeProto &node : model.graph().node())
    if (std::find(summary.opTypes.begin(), summary.opTypes.end(),
                  node.op_type()) == summary.opTypes.end())
      summary.opTypes.push_back(node.op_type());
  return summary;
}

Tensor readTensorProtoFile(const std::string &path,
                           std::optional<DType> expected) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto proto;
  if (!in || !proto.ParseFromIstream(&in))
    throw Error(path + ": error: not a serialized ONNX TensorProto");
  if (expected == DType::BF16 && proto.data_type() == onnx::TensorProto::UINT16)
    proto.set_data_type(onnx::TensorProto::BFLOAT16);
  try {
    return tensorFromProto(proto, std::filesystem::path(path).parent_path());
  } catch (const Unsupported &unsupported) {
    throw Error(path + ": error: " + unsupported.reason);
  }
}

std::vector<std::string> supportedOnnxOps() {
  // The opsets fusec reads an op in: from the first that defines it in a
  // version fusec reads (not before the op's row says) to the last that
  // does not deprecate it.
  auto readable = [](const std::string &opType, int64_t opset) {
    return opsetVersionProblem(opType, opset).empty();
  };
  std::vector<std::string> lines;
  auto list = [&](const std::string &opType, int64_t since) {
    int64_t oldest = std::max(since, kOldestOpset), newest = kMaxOpset;
    while (oldest <= kMaxOpset && !readable(opType, oldest))
      ++oldest;
    while (newest > oldest && !readable(opType, newest))
      --newest;
    if (oldest <= kMaxOpset)
      lines.push_back(opType + " " + std::to_string(oldest) + "-" +
                      std::to_string(newest));
  };
  for (const OnnxOp &op : onnxOps())
    list(op.onnxName, op.sinceOpset);
  for (const auto &[opType, convert] : OnnxConverter::specialOps())
    list(opType, kOldestOpset);
  std::sort(lines.begin(), lines.end());
  return lines;
}

} // namespace fusec

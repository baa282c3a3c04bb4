//===- OpTable.cpp - The rows of the Kina IR operation table --------------===//
//
// The one list of Kina IR's operations (OpTable.h): one row per op, with its
// operand count, the element types its first operand may take, its result
// rule and its attributes (kind, default, required) as docs/language.md's
// "Operations" and "Attributes" sections give them. Sema and MLIRGen read
// nothing else to know which ops exist; tests/docs checks the page against
// this list.
//
//===----------------------------------------------------------------------===//
#include "kina/OpTable.h"

#include <algorithm>

namespace kina {

namespace {

constexpr AttrDefault required() { return {AttrDefault::Required, 0, 0.0, ""}; }
constexpr AttrDefault computed() { return {AttrDefault::Computed, 0, 0.0, ""}; }
constexpr AttrDefault intDefault(int64_t v) {
  return {AttrDefault::Int, v, 0.0, ""};
}
constexpr AttrDefault floatDefault(double v) {
  return {AttrDefault::Float, 0, v, ""};
}
constexpr AttrDefault boolDefault(bool v) {
  return {AttrDefault::Bool, v ? 1 : 0, 0.0, ""};
}
constexpr AttrDefault stringDefault(const char *v) {
  return {AttrDefault::String, 0, 0.0, v};
}
/// The empty integer list (reductions' `axes = []`: all dims).
constexpr AttrDefault emptyListDefault() {
  return {AttrDefault::IntList, 0, 0.0, ""};
}

// The attributes of each op, in the order diagnostics list them.
const AttrDesc kGeluAttrs[] = {
    {"approximate", AttrKind::String, stringDefault("none")}};
const AttrDesc kCastAttrs[] = {{"to", AttrKind::Type, required()}};
const AttrDesc kAxisZeroAttrs[] = {{"axis", AttrKind::Int, intDefault(0)}};
const AttrDesc kTransposeAttrs[] = {{"perm", AttrKind::IntList, computed()}};
const AttrDesc kShapeAttrs[] = {{"shape", AttrKind::ShapeList, required()}};
const AttrDesc kSliceAttrs[] = {{"start", AttrKind::IntList, required()},
                                {"stop", AttrKind::IntList, required()},
                                {"step", AttrKind::IntList, computed()}};
const AttrDesc kReduceAttrs[] = {
    {"axes", AttrKind::IntList, emptyListDefault()},
    {"keepdims", AttrKind::Bool, boolDefault(false)}};
const AttrDesc kArgReduceAttrs[] = {
    {"axis", AttrKind::Int, intDefault(-1)},
    {"keepdims", AttrKind::Bool, boolDefault(false)}};
const AttrDesc kSoftmaxAttrs[] = {{"axis", AttrKind::Int, intDefault(-1)}};
const AttrDesc kLayerNormAttrs[] = {
    {"axis", AttrKind::Int, intDefault(-1)},
    {"epsilon", AttrKind::Float, floatDefault(1e-5)}};
const AttrDesc kRmsNormAttrs[] = {
    {"axis", AttrKind::Int, intDefault(-1)},
    {"epsilon", AttrKind::Float, floatDefault(1e-6)}};

using F = OpFamily;
using R = ResultRule;

/// The rows, sorted by name (lookupOp searches them by bisection).
const OpDesc kOps[] = {
    // name, family, operands min/max, first operand's types, result, attrs
    {"abs", F::UnaryNumeric, 1, 1, kNumericTypes, R::SameAsOperand, {}},
    {"add", F::Binary, 2, 2, kAllTypes, R::Broadcast, {}},
    {"argmax", F::ArgReduce, 1, 1, kAllTypes, R::Index, kArgReduceAttrs},
    {"argmin", F::ArgReduce, 1, 1, kAllTypes, R::Index, kArgReduceAttrs},
    {"broadcast_to", F::BroadcastTo, 1, 1, kAllTypes, R::Shaped, kShapeAttrs},
    {"call", F::Call, 0, kVariadic, kAllTypes, R::Callee, {}},
    {"cast", F::Cast, 1, 1, kAllTypes, R::CastTo, kCastAttrs},
    {"ceil", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"concat", F::Concat, 1, kVariadic, kAllTypes, R::Shaped, kAxisZeroAttrs},
    {"constant", F::Constant, 1, 1, kAllTypes, R::Written, {}},
    {"cos", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"div", F::Binary, 2, 2, kNumericTypes, R::Broadcast, {}},
    {"eq", F::Compare, 2, 2, kAllTypes, R::BroadcastBool, {}},
    {"erf", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"exp", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"floor", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"gather", F::Gather, 2, 2, kAllTypes, R::Shaped, kAxisZeroAttrs},
    {"ge", F::Compare, 2, 2, kAllTypes, R::BroadcastBool, {}},
    {"gelu", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, kGeluAttrs},
    {"gt", F::Compare, 2, 2, kAllTypes, R::BroadcastBool, {}},
    {"iota", F::Iota, 0, 0, kNumericTypes, R::Written, kAxisZeroAttrs},
    {"layer_norm", F::LayerNorm, 3, 3, kFloatTypes, R::SameAsOperand,
     kLayerNormAttrs},
    {"le", F::Compare, 2, 2, kAllTypes, R::BroadcastBool, {}},
    {"log", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"log_softmax", F::Softmax, 1, 1, kFloatTypes, R::SameAsOperand,
     kSoftmaxAttrs},
    {"lt", F::Compare, 2, 2, kAllTypes, R::BroadcastBool, {}},
    {"matmul", F::Matmul, 2, 2, kNumericTypes, R::Shaped, {}},
    {"max", F::Binary, 2, 2, kAllTypes, R::Broadcast, {}},
    {"min", F::Binary, 2, 2, kAllTypes, R::Broadcast, {}},
    {"mod", F::Binary, 2, 2, kNumericTypes, R::Broadcast, {}},
    {"mul", F::Binary, 2, 2, kAllTypes, R::Broadcast, {}},
    {"ne", F::Compare, 2, 2, kAllTypes, R::BroadcastBool, {}},
    {"neg", F::UnaryNumeric, 1, 1, kNumericTypes, R::SameAsOperand, {}},
    {"not", F::Not, 1, 1, kBoolType, R::SameAsOperand, {}},
    {"pow", F::Binary, 2, 2, kNumericTypes, R::Broadcast, {}},
    {"reduce_max", F::Reduce, 1, 1, kAllTypes, R::Shaped, kReduceAttrs},
    {"reduce_mean", F::Reduce, 1, 1, kFloatTypes, R::Shaped, kReduceAttrs},
    {"reduce_min", F::Reduce, 1, 1, kAllTypes, R::Shaped, kReduceAttrs},
    {"reduce_prod", F::Reduce, 1, 1, kNumericTypes, R::Shaped, kReduceAttrs},
    {"reduce_sum", F::Reduce, 1, 1, kNumericTypes, R::Shaped, kReduceAttrs},
    {"relu", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"reshape", F::Reshape, 1, 1, kAllTypes, R::Shaped, kShapeAttrs},
    {"rms_norm", F::RmsNorm, 2, 2, kFloatTypes, R::SameAsOperand,
     kRmsNormAttrs},
    {"rsqrt", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"select", F::Select, 3, 3, kAllTypes, R::Broadcast, {}},
    {"sigmoid", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"sin", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"slice", F::Slice, 1, 1, kAllTypes, R::Shaped, kSliceAttrs},
    {"softmax", F::Softmax, 1, 1, kFloatTypes, R::SameAsOperand, kSoftmaxAttrs},
    {"sqrt", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"sub", F::Binary, 2, 2, kNumericTypes, R::Broadcast, {}},
    {"tanh", F::UnaryFloat, 1, 1, kFloatTypes, R::SameAsOperand, {}},
    {"transpose", F::Transpose, 1, 1, kAllTypes, R::Shaped, kTransposeAttrs},
};

bool byName(const OpDesc &d, llvm::StringRef name) {
  return llvm::StringRef(d.name) < name;
}

} // namespace

const char *describeAttrKind(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int:
    return "an integer";
  case AttrKind::Float:
    return "a number";
  case AttrKind::Bool:
    return "a boolean (true or false)";
  case AttrKind::String:
    return "a string";
  case AttrKind::Type:
    return "an element type";
  case AttrKind::IntList:
    return "a list of integers";
  case AttrKind::ShapeList:
    return "a list of sizes and dim names";
  }
  return "?";
}

const AttrDesc *OpDesc::attr(llvm::StringRef name) const {
  for (const AttrDesc &a : attrs)
    if (name == a.name)
      return &a;
  return nullptr;
}

llvm::ArrayRef<OpDesc> opTable() { return kOps; }

const OpDesc *lookupOp(llvm::StringRef name) {
  const OpDesc *it =
      std::lower_bound(std::begin(kOps), std::end(kOps), name, byName);
  if (it == std::end(kOps) || name != it->name)
    return nullptr;
  return it;
}

std::vector<llvm::StringRef> opNames() {
  std::vector<llvm::StringRef> names;
  for (const OpDesc &d : kOps)
    names.push_back(d.name);
  return names;
}

} // namespace kina

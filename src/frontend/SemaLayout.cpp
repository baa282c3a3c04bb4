//===- SemaLayout.cpp - Inference of the layout ops -----------------------===//
//
// Shape inference of the ops that move elements without computing on them
// (docs/language.md, "Layout ops", "gather"): transpose (perm, default the
// reversed axes), reshape (sizes, parameter dim names and one -1), concat,
// slice (NumPy's start/stop/step clamping) and gather.
//
//===----------------------------------------------------------------------===//
#include "Format.h"
#include "SemaImpl.h"

#include "kina/Shapes.h"

namespace kina {
namespace sema {

MaybeType Sema::inferTranspose(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  int64_t rank = x.rank();
  if (!st.attr("perm")) {
    std::vector<int64_t> rev;
    for (int64_t i = rank - 1; i >= 0; --i)
      rev.push_back(i);
    addDefault(st, "perm", listValue(rev, st.opLoc));
  }
  const Attribute *a = st.attr("perm");
  std::vector<int64_t> perm = intList(st, "perm");
  if (static_cast<int64_t>(perm.size()) != rank) {
    error(a->value.loc) << "'transpose' perm " << listString(perm) << " has "
                        << pluralize(perm.size(), "entry", "entries")
                        << ", but the operand " << x.str() << " has rank "
                        << rank;
    return std::nullopt;
  }
  std::vector<bool> seen(rank, false);
  TensorType r{x.elementType, {}};
  for (int64_t p : perm) {
    std::optional<int64_t> ax = normalizeAxis(p, rank);
    if (!ax) {
      error(a->value.loc) << "'transpose' perm entry " << p
                          << " is out of range for rank " << rank;
      return std::nullopt;
    }
    if (seen[*ax]) {
      error(a->value.loc) << "'transpose' perm " << listString(perm)
                          << " is not a permutation: axis " << *ax
                          << " appears twice";
      return std::nullopt;
    }
    seen[*ax] = true;
    r.dims.push_back(x.dims[*ax]);
  }
  return r;
}

bool Sema::checkShapeList(Statement &st, bool allowMinusOne) {
  const Attribute *a = st.attr("shape");
  int minusOnes = 0;
  for (const AttrValue &e : a->value.elements) {
    if (e.kind == AttrValue::Symbol) {
      if (!paramSymbols.contains(e.stringValue)) {
        std::vector<llvm::StringRef> dims;
        for (const auto &entry : paramSymbols)
          dims.push_back(entry.getKey());
        error(e.loc) << "'" << st.op << "' shape uses '" << e.stringValue
                     << "', which is not a symbolic dim of @" << fn->name
                     << "'s parameters" << didYouMean(e.stringValue, dims);
        return false;
      }
      continue;
    }
    if (e.intValue == -1 && allowMinusOne) {
      if (++minusOnes > 1) {
        error(e.loc) << "'" << st.op << "' shape may hold only one -1";
        return false;
      }
      continue;
    }
    if (e.intValue < 0) {
      error(e.loc) << "'" << st.op << "' shape entry " << e.intValue
                   << " is negative"
                   << (allowMinusOne ? " (only one -1 is allowed)" : "");
      return false;
    }
  }
  if (static_cast<int64_t>(a->value.elements.size()) > kMaxRank) {
    error(a->value.loc) << "'" << st.op << "' shape has "
                        << a->value.elements.size()
                        << " entries, above the maximum rank " << kMaxRank;
    return false;
  }
  return true;
}

MaybeType Sema::inferReshape(Statement &st) {
  if (!requireValue(st, 0) || !checkShapeList(st, /*allowMinusOne=*/true))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  const Attribute *a = st.attr("shape");
  // Element counts as static product x symbol multiset (+ unknown `?`).
  int64_t inStatic = 1;
  bool inDynamic = false;
  std::multiset<std::string> inSyms, outSyms;
  bool inOverflow = false;
  for (const Dim &d : x.dims) {
    if (d.isStatic()) {
      if (__builtin_mul_overflow(inStatic, d.size, &inStatic))
        inOverflow = true;
    } else if (d.kind == Dim::Symbolic) {
      inSyms.insert(d.symbol);
    } else {
      inDynamic = true;
    }
  }
  int64_t outStatic = 1;
  int64_t minusOneAt = -1;
  TensorType r{x.elementType, {}};
  for (const AttrValue &e : a->value.elements) {
    if (e.kind == AttrValue::Symbol) {
      outSyms.insert(e.stringValue);
      r.dims.push_back(Dim::named(e.stringValue));
    } else if (e.intValue == -1) {
      minusOneAt = r.rank();
      r.dims.push_back(Dim::dynamic());
    } else {
      if (__builtin_mul_overflow(outStatic, e.intValue, &outStatic))
        inOverflow = true;
      r.dims.push_back(Dim::fixed(e.intValue));
    }
  }
  bool comparable = !inDynamic && !inOverflow && inSyms == outSyms;
  if (minusOneAt < 0) {
    if (comparable && inStatic != outStatic) {
      error(st.opLoc) << "'reshape' cannot turn " << x.str() << " into "
                      << r.str() << ": the element counts differ";
      return std::nullopt;
    }
    return r;
  }
  if (comparable) {
    if (outStatic == 0 || inStatic % outStatic != 0) {
      error(st.opLoc) << "'reshape' cannot turn " << x.str() << " into "
                      << "shape " << r.str()
                      << " with -1: the other sizes do not divide the "
                         "element count";
      return std::nullopt;
    }
    r.dims[minusOneAt] = Dim::fixed(inStatic / outStatic);
  }
  return r;
}

MaybeType Sema::inferConcat(Statement &st) {
  std::vector<size_t> all;
  for (size_t i = 0; i < st.operands.size(); ++i) {
    if (!requireValue(st, i))
      return std::nullopt;
    all.push_back(i);
  }
  if (!sameElementType(st, all))
    return std::nullopt;
  const TensorType &first = *st.operands[0].type;
  addDefault(st, "axis");
  std::optional<int64_t> axis = axisAttr(st, "axis", first.rank());
  if (!axis)
    return std::nullopt;
  TensorType r = first;
  bool allStatic = first.dims[*axis].isStatic();
  int64_t sum = allStatic ? first.dims[*axis].size : 0;
  for (size_t i = 1; i < st.operands.size(); ++i) {
    const TensorType &t = *st.operands[i].type;
    if (t.rank() != first.rank()) {
      error(st.opLoc) << "'concat' operands must have the same rank, found "
                      << first.str() << " and " << t.str();
      return std::nullopt;
    }
    for (int64_t d = 0; d < t.rank(); ++d) {
      if (d == *axis) {
        if (t.dims[d].isStatic() && allStatic)
          allStatic = !__builtin_add_overflow(sum, t.dims[d].size, &sum);
        else
          allStatic = false;
        continue;
      }
      std::optional<Dim> u = unifyDim(r.dims[d], t.dims[d]);
      if (!u) {
        error(st.opLoc) << "'concat' operands " << first.str() << " and "
                        << t.str() << " differ in dim " << d
                        << ", which is not the concatenation axis " << *axis;
        return std::nullopt;
      }
      r.dims[d] = *u;
    }
  }
  r.dims[*axis] = allStatic ? Dim::fixed(sum) : Dim::dynamic();
  return r;
}

MaybeType Sema::inferSlice(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  int64_t rank = x.rank();
  if (!st.attr("step"))
    addDefault(st, "step", listValue(std::vector<int64_t>(rank, 1), st.opLoc));
  std::vector<int64_t> start = intList(st, "start"), stop = intList(st, "stop"),
                       step = intList(st, "step");
  for (const char *name : {"start", "stop", "step"}) {
    const Attribute *a = st.attr(name);
    if (static_cast<int64_t>(a->value.elements.size()) != rank) {
      error(a->value.loc) << "'slice' " << name << " has "
                          << pluralize(a->value.elements.size(), "entry",
                                       "entries")
                          << ", but the operand " << x.str() << " has rank "
                          << rank;
      return std::nullopt;
    }
  }
  const Attribute *stepAttr = st.attr("step");
  for (int64_t i = 0; i < rank; ++i)
    if (step[i] == 0) {
      error(stepAttr->value.elements[i].loc)
          << "'slice' step must not be 0 (dim " << i << ")";
      return std::nullopt;
    }
  TensorType r{x.elementType, {}};
  for (int64_t i = 0; i < rank; ++i) {
    const Dim &d = x.dims[i];
    if (d.isStatic()) {
      r.dims.push_back(Dim::fixed(
          normalizeSlice(start[i], stop[i], step[i], d.size).length));
      continue;
    }
    // Slices that keep every element whatever the size keep the dim.
    bool whole = (step[i] == 1 && (start[i] == 0 || start[i] == INT64_MIN) &&
                  stop[i] == INT64_MAX) ||
                 (step[i] == -1 && (start[i] == -1 || start[i] == INT64_MAX) &&
                  stop[i] == INT64_MIN);
    r.dims.push_back(whole ? d : Dim::dynamic());
  }
  return r;
}

MaybeType Sema::inferGather(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &table = *st.operands[0].type;
  Operand &idx = st.operands[1];
  addDefault(st, "axis");
  std::optional<int64_t> axis = axisAttr(st, "axis", table.rank());
  if (!axis)
    return std::nullopt;
  if (idx.kind == Operand::IntLiteral) {
    idx.type = TensorType{ElementType::I64, {}};
    const Dim &d = table.dims[*axis];
    if (d.isStatic() && (idx.intValue < -d.size || idx.intValue >= d.size)) {
      error(idx.loc) << "'gather' index " << idx.intValue
                     << " is out of range for dim " << *axis << " of "
                     << table.str();
      return std::nullopt;
    }
  } else if (idx.kind != Operand::Value) {
    error(idx.loc) << "'gather' indices must be i32 or i64, found the "
                      "literal "
                   << literalSpelling(idx);
    return std::nullopt;
  } else if (idx.type->elementType != ElementType::I32 &&
             idx.type->elementType != ElementType::I64) {
    error(st.opLoc) << "'gather' indices must be i32 or i64, found "
                    << idx.type->str();
    return std::nullopt;
  }
  TensorType r{table.elementType, {}};
  r.dims.insert(r.dims.end(), table.dims.begin(), table.dims.begin() + *axis);
  r.dims.insert(r.dims.end(), idx.type->dims.begin(), idx.type->dims.end());
  r.dims.insert(r.dims.end(), table.dims.begin() + *axis + 1, table.dims.end());
  return r;
}

} // namespace sema
} // namespace kina

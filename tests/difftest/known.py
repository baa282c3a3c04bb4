"""Known kinac bugs that the differential tests find (issue 18 and later), each with
a predicate that recognises a failure as that bug. `difftest.py --known`
reports such failures as XFAIL instead of FAIL, so that the fixed seed
range of the ctest test stays meaningful while a fix is under way. Remove
an entry once its bug is fixed (its regression case in regressions/ then
passes, and the replay says its "xfail" marker must go).

A predicate gets (prog, infos, outcome): the program (kgen.Program),
{function name: {value name: kgen.Info}} and the difftest Outcome.
"""


def _ops(prog):
    for f in prog.funcs.values():
        for s in f.stmts:
            yield f, s


def _truncsfbf2(prog, infos, o):
    return o.cls == "link_error" and "__truncsfbf2" in o.detail + o.log


KNOWN = [  # (name, description, predicate)
    ("concat-size0-matmul-bf16-truncsfbf2",
     "found by difftest, not yet fixed: a bf16 value chosen by a branch "
     "(concat with a size-0 part, then matmul) fails to link: undefined "
     "__truncsfbf2 (an LLVM bfloat phi, promoted by the x86 backend)",
     _truncsfbf2),
]


def match(prog, infos, outcome):
    """The name of the known bug `outcome` is, or None."""
    for name, _, pred in KNOWN:
        try:
            if pred(prog, infos, outcome):
                return name
        except (KeyError, IndexError):
            continue
    return None

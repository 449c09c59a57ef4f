"""Inline device-function calls into the kernel, at the PTX level.

The machine has no call stack, so a kernel that calls a `.func` (a
`__noinline__` helper, or one the compiler chose not to inline) gets a copy
of the callee's body at each call site, before lowering:

* the callee's registers and labels are renamed per call site (`%r1@2`), so
  copies never share state; a `ret` becomes a branch to the end of the copy;
* argument passing through `.param` space becomes plain registers: every
  `st.param [slot+off]` / `ld.param [slot+off]` on a call-site slot or on the
  callee's own parameters and return values is a `mov`/`cvt` on one register
  per (slot, offset), so the register allocator sees ordinary values;
* the callee's parameter and return names are renamed to the call site's
  argument and return slots, so they meet in the same registers.

Kernel parameters stay `ld.param` loads. Recursion, indirect calls and calls
of functions without a body (printf's `vprintf`, assert's `__assertfail`) are
refused with a message that says which.
"""
from __future__ import annotations

from dataclasses import replace

from qwengpu.errors import UnsupportedError, plural
from qwengpu.toolchain import ptx

# functions the front ends call for library features the machine does not have
_LIBRARY = {"vprintf": "device printf is not supported: write the values to an output array instead",
            "__assertfail": "assert is not supported: check the condition and write a flag to an output array",
            "malloc": "device malloc is not supported", "free": "device free is not supported"}


def inline_calls(module: ptx.Module, fn: ptx.Function) -> ptx.Function:
    """`fn` with every call replaced by the callee's body (fn itself if it makes no calls)."""
    if not any(isinstance(i, ptx.Instruction) and i.parts[0] == "call" for i in fn.body):
        return fn
    out = replace(fn, regs=dict(fn.regs), body=[], variables=list(fn.variables))
    _Inliner(module, out).copy(fn, (fn.name,), lambda name: name, {})
    _slots_to_registers(out, {p.name for p in fn.params})
    return out


class _Inliner:
    def __init__(self, module: ptx.Module, out: ptx.Function):
        self.module, self.out = module, out
        self.sites = 0
        self.globals = {v.name for v in module.variables} | set(module.functions)

    def copy(self, fn: ptx.Function, stack: tuple[str, ...], rename, syms: dict[str, str]) -> None:
        """Append fn's body to out: registers through `rename`, symbols through `syms`."""
        for item in fn.body:
            if isinstance(item, ptx.Label):
                self.out.body.append(ptx.Label(item.line, syms.get(item.name, item.name)))
            elif item.parts[0] == "call":
                self.call(item, stack, rename, syms)
            else:
                self.out.body.append(self.rewrite(item, rename, syms))

    def rewrite(self, ins: ptx.Instruction, rename, syms) -> ptx.Instruction:
        def op(o):
            if isinstance(o, ptx.Reg):
                return ptx.Reg(rename(o.name))
            if isinstance(o, ptx.Sym):
                return ptx.Sym(syms.get(o.name, o.name))
            if isinstance(o, ptx.Addr):
                return ptx.Addr(op(o.base) if o.base is not None else None, o.offset)
            if isinstance(o, ptx.Vec):
                return ptx.Vec(tuple(op(x) for x in o.items))
            if isinstance(o, ptx.Not):
                return ptx.Not(op(o.reg))
            if isinstance(o, ptx.Pair):
                return ptx.Pair(op(o.first), op(o.second))
            return o
        pred = ptx.Reg(rename(ins.pred.name)) if ins.pred is not None else None
        return ptx.Instruction(ins.line, ins.opcode, [op(o) for o in ins.operands], pred, ins.pred_negated)

    def call(self, ins: ptx.Instruction, stack, rename, syms) -> None:
        rets, callee, args = _call_operands(ins)
        where = f"{self.module.where(ins.line)}: function {ptx_name(stack[-1])}"
        if callee is None:
            raise UnsupportedError(f"{where} makes an indirect call (a function pointer), which is not supported")
        if callee in _LIBRARY:
            raise UnsupportedError(f"{where} calls {callee}: {_LIBRARY[callee]}")
        target = self.module.functions.get(callee)
        if target is None or (not target.body and not target.is_entry):
            raise UnsupportedError(f"{where} calls {ptx_name(callee)}, which has no body in this module "
                                   "(an external function); define it in the same source")
        if callee in stack:
            chain = " -> ".join(ptx.plain_name(n) for n in stack[stack.index(callee):] + (callee,))
            raise UnsupportedError(f"{where} is recursive ({chain}): the machine has no call stack, so "
                                   "recursion is not supported; rewrite it as a loop")
        if ins.pred is not None:
            raise UnsupportedError(f"{where}: a predicated call is not supported")
        if len(args) != len(target.params) or len(rets) != len(target.returns):
            raise UnsupportedError(f"{where} calls {ptx_name(callee)} with {plural(len(args), 'argument')} and "
                                   f"{plural(len(rets), 'result')}; it declares {len(target.params)} and "
                                   f"{len(target.returns)}")
        self.sites += 1
        tag = f"@{self.sites}"
        inner = {p.name: syms.get(a, a) for p, a in zip(target.params, args)}
        inner |= {r.name: syms.get(a, a) for r, a in zip(target.returns, rets)}
        # the callee's variables (its .local frame, say) are the function's, one copy for all its call
        # sites: without recursion no two of them are live at once
        inner |= {v.name: f"{v.name}@{callee}" for v in target.variables}
        for item in target.body:       # labels and the callee's own call slots are local to this copy
            names = [item.name] if isinstance(item, ptx.Label) else _symbols(item)
            inner |= {n: n + tag for n in names if n not in inner and n not in self.globals}
        end = f"$__return{tag}"
        for reg, typ in target.regs.items():
            self.out.regs[reg + tag] = typ
        known = {v.name for v in self.out.variables}
        self.out.variables += [replace(v, name=inner[v.name]) for v in target.variables if inner[v.name] not in known]
        body = [ptx.Instruction(i.line, "bra", [ptx.Sym(end)], i.pred, i.pred_negated)
                if isinstance(i, ptx.Instruction) and i.parts[0] in ("ret", "exit") else i for i in target.body]
        self.copy(replace(target, body=body), stack + (callee,), lambda r: r + tag, inner)
        self.out.body.append(ptx.Label(ins.line, end))


def _call_operands(ins: ptx.Instruction) -> tuple[list[str], str | None, list[str]]:
    """`call (ret), f, (args)` -> (return slots, callee or None if indirect, argument slots)."""
    ops = list(ins.operands)
    rets = [o.name for o in ops.pop(0).items] if ops and isinstance(ops[0], ptx.Vec) else []
    callee = ops.pop(0) if ops else None
    args = [o.name for o in ops[0].items] if ops and isinstance(ops[0], ptx.Vec) else []
    return rets, callee.name if isinstance(callee, ptx.Sym) else None, args


def _symbols(ins: ptx.Instruction) -> list[str]:
    found = []
    for o in ins.operands:
        base = o.base if isinstance(o, ptx.Addr) else o
        if isinstance(base, ptx.Sym):
            found.append(base.name)
    return found


def ptx_name(name: str) -> str:
    plain = ptx.plain_name(name)
    return plain if plain == name else f"{plain} ({name})"


# ---------------------------------------------------------------------------
# .param slots -> registers
# ---------------------------------------------------------------------------
def _slots_to_registers(fn: ptx.Function, kernel_params: set[str]) -> None:
    """Rewrite st.param/ld.param on non-kernel slots into mov/cvt on one register per (slot, offset)."""
    widths: dict[tuple[str, int], int] = {}
    for ins in fn.body:
        for key, bits in _slot_accesses(ins, kernel_params):
            widths[key] = max(widths.get(key, 0), bits)
    regs = {key: f"%param:{key[0]}+{key[1]}" for key in widths}
    for key, name in regs.items():
        fn.regs[name] = f"b{max(32, widths[key])}"
    body = []
    for ins in fn.body:
        accesses = _slot_accesses(ins, kernel_params)
        if not accesses:
            body.append(ins)
            continue
        bits = accesses[0][1]
        kind = next(p for p in ins.parts[1:] if p in ptx.TYPE_BITS)
        if ins.parts[0] == "st":
            values = ins.operands[1].items if isinstance(ins.operands[1], ptx.Vec) else (ins.operands[1],)
            body += [ptx.Instruction(ins.line, f"mov.b{bits}", [ptx.Reg(regs[key]), v], ins.pred, ins.pred_negated)
                     for (key, _), v in zip(accesses, values)]
        else:
            dsts = ins.operands[0].items if isinstance(ins.operands[0], ptx.Vec) else (ins.operands[0],)
            sign = "s" if kind.startswith("s") else "u"
            for (key, _), d in zip(accesses, dsts):
                dbits = ptx.TYPE_BITS[fn.regs[d.name]] if isinstance(d, ptx.Reg) else bits
                body.append(ptx.Instruction(ins.line, f"cvt.{sign}{max(dbits, 8)}.{sign}{bits}",
                                            [d, ptx.Reg(regs[key])], ins.pred, ins.pred_negated))
    fn.body = body


def _slot_accesses(ins, kernel_params: set[str]) -> list[tuple[tuple[str, int], int]]:
    """((slot, byte offset), bits) of each element an ld.param/st.param moves, [] for other instructions."""
    if not isinstance(ins, ptx.Instruction) or ins.parts[0] not in ("ld", "st") or "param" not in ins.parts:
        return []
    addr = ins.operands[1] if ins.parts[0] == "ld" else ins.operands[0]
    if not isinstance(addr, ptx.Addr) or not isinstance(addr.base, ptx.Sym) or addr.base.name in kernel_params:
        return []
    bits = next(ptx.TYPE_BITS[p] for p in ins.parts[1:] if p in ptx.TYPE_BITS)
    data = ins.operands[0] if ins.parts[0] == "ld" else ins.operands[1]
    n = len(data.items) if isinstance(data, ptx.Vec) else 1
    step = max(1, bits // 8)
    return [((addr.base.name, addr.offset + k * step), bits) for k in range(n)]

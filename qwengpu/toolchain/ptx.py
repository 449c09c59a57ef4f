"""A parser for the PTX that clang-19 and NVRTC emit for integer CUDA kernels.

`parse_ptx(text) -> Module` turns PTX text into plain data: module variables,
and for each .entry/.func its parameters, register declarations and body (a
flat list of labels and instructions, in source order). Nested `{ }` scopes
are flattened: a register declared in an inner scope is renamed `name#k` so
shadowing declarations stay distinct. Semantics live in the lowering (lower.py and its stages).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from qwengpu.errors import CompileError

# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------
SREGS = {f"%{r}.{c}" for r in ("tid", "ntid", "ctaid", "nctaid") for c in "xyz"} | {"%laneid", "%warpid", "%nwarpid"}
# special registers PTX has and the machine does not: parsed, so lowering can say why it refuses them
UNSUPPORTED_SREGS = {
    **dict.fromkeys(("%clock", "%clock64", "%clock_hi", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"),
                    "the machine has no clock (clock(), clock64(), globaltimer)"),
    **dict.fromkeys(("%smid", "%nsmid", "%gridid"), "the machine has one multiprocessor and one grid"),
    **dict.fromkeys(("%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt"),
                    "compute the lane mask from threadIdx (warpSize is 4)"),
    **dict.fromkeys(("%dynamic_smem_size", "%total_smem_size"), "shared memory sizes are not readable"),
}

TYPE_BITS = {"pred": 1, "b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16,
             "b32": 32, "u32": 32, "s32": 32, "f32": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64}


@dataclass(frozen=True)
class Reg:
    name: str          # unique within the function (inner-scope names are renamed)


@dataclass(frozen=True)
class SpecialReg:
    name: str          # e.g. "%tid.x"


@dataclass(frozen=True)
class Imm:
    value: int         # integer literal (float literals keep their bit pattern)
    float_bits: int = 0     # 32 for a 0f literal (fp32 bits), 64 for 0d (fp64), 0 for an integer

    @property
    def is_float(self) -> bool:
        return self.float_bits > 0


@dataclass(frozen=True)
class Sym:
    name: str          # a variable, parameter, label or function name


@dataclass(frozen=True)
class Addr:
    base: Reg | Sym | None
    offset: int = 0


@dataclass(frozen=True)
class Vec:
    items: tuple


@dataclass(frozen=True)
class Not:
    reg: Reg           # `!%p` as an operand


@dataclass(frozen=True)
class Pair:
    first: object      # `%p|%q` destination of setp / shfl
    second: object


@dataclass(frozen=True)
class Sink:
    pass               # `_`


@dataclass
class Instruction:
    line: int
    opcode: str                 # full opcode with modifiers, e.g. "setp.lt.s32"
    operands: list
    pred: Reg | None = None
    pred_negated: bool = False

    @property
    def parts(self) -> list[str]:
        return self.opcode.split(".")

    def __str__(self):
        p = f"@{'!' if self.pred_negated else ''}{self.pred.name} " if self.pred else ""
        return f"{p}{self.opcode} ..."


@dataclass
class Label:
    line: int
    name: str


@dataclass
class Variable:
    """A .global/.const/.shared variable (module-level, or demoted into a function)."""
    name: str
    space: str                  # "global" | "const" | "shared"
    type: str                   # element type, e.g. "b8", "u32"
    size: int                   # bytes (0 for an unsized `.extern .shared x[]`)
    align: int = 4
    init: list[int] | None = None   # element values
    extern: bool = False
    line: int = 0

    @property
    def elem_bytes(self) -> int:
        return max(1, TYPE_BITS[self.type] // 8)


@dataclass
class ParamDecl:
    name: str
    type: str
    size: int                   # bytes
    line: int = 0


@dataclass
class Function:
    name: str
    is_entry: bool
    params: list[ParamDecl]
    regs: dict[str, str]        # unique register name -> type
    body: list                  # Label | Instruction
    variables: list[Variable] = field(default_factory=list)   # demoted .shared
    returns: list[ParamDecl] = field(default_factory=list)
    line: int = 0


@dataclass
class Module:
    version: str = ""
    target: str = ""
    address_size: int = 64
    functions: dict[str, Function] = field(default_factory=dict)
    variables: list[Variable] = field(default_factory=list)
    source: dict[int, tuple[str, int]] = field(default_factory=dict)   # PTX line -> (CUDA file, line)
    filename: str = ""        # the CUDA file the PTX was compiled from, for messages ("" if unknown)
    cuda: str = ""            # that file's text ("" if unknown)

    def where(self, line: int) -> str:
        """`dot.cu:5 (PTX line 41)` where the PTX has line info (.loc), else `dot.cu: PTX line 41
        (no CUDA source line)` (a PTX line number is not a line of dot.cu), or `PTX line 41`."""
        if line in self.source:
            path, src_line = self.source[line]
            return f"{path}:{src_line} (PTX line {line})"
        if self.filename:
            return f"{self.filename}: PTX line {line} (no CUDA source line)"
        return f"PTX line {line}"

    def cuda_line(self, line: int) -> str:
        """The text of the CUDA line that PTX line `line` came from ("" if unknown)."""
        path, src_line = self.source.get(line, ("", 0))
        lines = self.cuda.splitlines()
        if not self.filename or Path(path).name != Path(self.filename).name or not 0 < src_line <= len(lines):
            return ""
        return lines[src_line - 1]

    @property
    def kernels(self) -> dict[str, Function]:
        return {n: f for n, f in self.functions.items() if f.is_entry}


# ---------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------
_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+) | (?P<nl>\n) | (?P<lc>//[^\n]*) | (?P<bc>/\*.*?\*/)
  | (?P<str>"[^"\n]*")
  | (?P<ver>[0-9]+\.[0-9]+)
  | (?P<num>0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|0[xX][0-9a-fA-F]+U?|[0-9]+U?)
  | (?P<id>[%.$_a-zA-Z](?:[\w$.%]|::)*)
  | (?P<punct>[{}()\[\],;:@!+\-=<>|])
""", re.VERBOSE | re.DOTALL)

_LINE_DIRECTIVES = (".loc", ".file")
_TOOLCHAIN_DIR = Path(__file__).resolve().parent     # prelude.h and include/: code the user did not write


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    out, pos, line = [], 0, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise CompileError(f"PTX line {line}: unexpected character {text[pos]!r}")
        kind, val = m.lastgroup, m.group()
        if kind == "nl":
            line += 1
        elif kind == "bc":
            line += val.count("\n")
        elif kind not in ("ws", "lc"):
            out.append((kind, val, line))
        pos = m.end()
    return out


# labels the line tables add, never branched to (dropped so they split no block)
_DEBUG_LABEL = re.compile(r"\s*\$L__(tmp|func_begin|func_end)\d+:\s*$")


def _strip_line_directives(text: str) -> str:
    """.loc/.file take no semicolon: drop them line by line (line numbers stay)."""
    return "\n".join("" if ln.split(None, 1)[:1] and ln.split(None, 1)[0] in _LINE_DIRECTIVES
                     or _DEBUG_LABEL.match(ln) else ln for ln in text.split("\n"))


def source_lines(text: str) -> dict[int, tuple[str, int]]:
    """PTX line -> (CUDA file, line) from the .file/.loc line tables (clang -gline-tables-only,
    NVRTC -lineinfo); file paths are shown relative to the working directory. Code inlined from
    the prelude is the user's line that called it: NVRTC's `.loc` of a prelude line says
    `inlined_at FILE LINE COL`, followed out of the prelude here (clang names the call's line
    itself: the prelude's functions are nodebug)."""
    lines = text.split("\n")
    files, toolchain = {}, set()
    for ln in lines:
        m = re.match(r'\s*\.file\s+(\d+)\s+"([^"]*)"', ln)
        if m:
            files[m.group(1)] = os.path.relpath(m.group(2)) if os.path.isabs(m.group(2)) else m.group(2)
            if _in_toolchain(m.group(2)):
                toolchain.add(m.group(1))
    found, loc = {}, None
    call_site: dict[tuple[str, str, str], tuple[str, str]] = {}   # a prelude .loc -> where it was inlined
    for i, ln in enumerate(lines, 1):
        m = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)(?:\s+(\d+))?(?:.*\binlined_at\s+(\d+)\s+(\d+)\s+(\d+))?", ln)
        if m:
            file, line = m.group(1), m.group(2)
            if m.group(4) and file in toolchain:
                outer = m.group(4, 5, 6)
                call_site[m.group(1, 2, 3)] = call_site.get(outer, outer[:2])
                file, line = call_site[m.group(1, 2, 3)]
            loc = (files.get(file), int(line)) if int(line) else None
        elif ln.strip() == "}":
            loc = None
        elif loc and loc[0]:
            found[i] = loc
    return found


def _in_toolchain(path: str) -> bool:
    """The prelude or one of the project's include stubs (qwengpu/toolchain/)."""
    try:
        return Path(path).resolve().is_relative_to(_TOOLCHAIN_DIR)
    except (OSError, ValueError):
        return False


def _parse_int(tok: str) -> tuple[int, int]:
    """A literal's value and its float width (0: an integer)."""
    t = tok.rstrip("U")
    if t[:2] in ("0f", "0F", "0d", "0D"):
        return int(t[2:], 16), 32 if t[1] in "fF" else 64
    return int(t, 0) if t[:2].lower() == "0x" else int(t), 0


# ---------------------------------------------------------------------------
# Parser
# ---------------------------------------------------------------------------
class _Parser:
    def __init__(self, text: str):
        self.toks = _tokenize(_strip_line_directives(text))
        self.i = 0
        self.module = Module(source=source_lines(text))

    # -- token helpers ---------------------------------------------------------
    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.toks[j][1] if j < len(self.toks) else None

    @property
    def line(self) -> int:
        if self.i < len(self.toks):
            return self.toks[self.i][2]
        return self.toks[-1][2] if self.toks else 1

    def next(self) -> str:
        if self.i >= len(self.toks):
            raise CompileError(f"PTX line {self.line}: unexpected end of PTX")
        self.i += 1
        return self.toks[self.i - 1][1]

    def kind(self) -> str | None:
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def expect(self, val: str) -> None:
        line, got = self.line, self.next()
        if got != val:
            raise CompileError(f"PTX line {line}: expected {val!r}, found {got!r}")

    def accept(self, val: str) -> bool:
        if self.peek() == val:
            self.i += 1
            return True
        return False

    def error(self, msg: str):
        raise CompileError(f"PTX line {self.line}: {msg}")

    def integer(self) -> int:
        neg = self.accept("-")
        if self.kind() != "num":
            self.error(f"expected a number, found {self.peek()!r}")
        v, _ = _parse_int(self.next())
        return -v if neg else v

    def skip_statement(self) -> None:
        while self.next() != ";":
            pass

    # -- module level ----------------------------------------------------------
    def parse(self) -> Module:
        m = self.module
        while self.i < len(self.toks):
            tok = self.peek()
            if tok == ".version":
                self.next()
                m.version = self.next()
            elif tok == ".target":
                self.next()
                parts = [self.next()]
                while self.accept(","):
                    parts.append(self.next())
                m.target = ",".join(parts)
            elif tok == ".address_size":
                self.next()
                m.address_size = self.integer()
            elif tok in (".visible", ".weak", ".extern", ".common"):
                self.next()
            elif tok in (".entry", ".func"):
                self.function()
            elif tok in (".global", ".const", ".shared"):
                m.variables.append(self.variable(extern=self.toks[self.i - 1][1] == ".extern"))
            elif tok == ".pragma":
                self.skip_statement()
            elif tok == ".section":
                self.skip_section()
            elif tok == ";":
                self.next()
            else:
                self.error(f"unexpected {tok!r} at module level")
        return m

    def skip_section(self) -> None:
        while self.next() != "{":
            pass
        depth = 1
        while depth:
            t = self.next()
            depth += (t == "{") - (t == "}")

    def variable(self, extern: bool = False) -> Variable:
        line = self.line
        space = self.next()[1:]
        align, typ = 4, None
        while self.peek().startswith(".") and self.peek()[1:] not in TYPE_BITS:
            d = self.next()
            if d == ".align":
                align = self.integer()
            # other qualifiers (.v4, .attribute) are ignored
        if self.peek() and self.peek().startswith("."):
            typ = self.next()[1:]
        if typ is None:
            self.error("variable declaration without a type")
        name = self.next()
        count, unsized = 1, False
        while self.accept("["):
            if self.accept("]"):
                unsized = True
                continue
            count *= self.integer()
            self.expect("]")
        init = None
        if self.accept("="):
            init = self.initializer()
        self.expect(";")
        elem = max(1, TYPE_BITS[typ] // 8)
        return Variable(name, space, typ, 0 if unsized else count * elem, align, init, extern, line)

    def initializer(self) -> list[int]:
        if self.accept("{"):
            vals = []
            while not self.accept("}"):
                vals += self.initializer()
                self.accept(",")
            return vals
        if self.kind() == "id":
            self.error(f"address initialisers ({self.peek()}) are not supported")
        return [self.integer()]

    def param_list(self, fname: str) -> list[ParamDecl]:
        params = []
        self.expect("(")
        while not self.accept(")"):
            line = self.line
            self.expect(".param")
            typ = None
            while self.peek().startswith("."):
                d = self.next()[1:]
                if d in TYPE_BITS:
                    typ = d
                elif d == "align":
                    self.integer()
                # .ptr, .global, .shared ... qualifiers are ignored
            name = self.next()
            count = 1
            while self.accept("["):
                count *= self.integer()
                self.expect("]")
            if typ is None:
                raise CompileError(f"PTX line {line}: parameter {name} of {fname} has no type")
            params.append(ParamDecl(name, typ, count * max(1, TYPE_BITS[typ] // 8), line))
            self.accept(",")
        return params

    def function(self) -> None:
        line = self.line
        is_entry = self.next() == ".entry"
        returns = self.param_list("function") if self.peek() == "(" else []
        name = self.next()
        params = self.param_list(name) if self.peek() == "(" else []
        # performance directives (.maxntid 4, 1, 1 etc.) until the body or ';'
        while self.peek() not in ("{", ";"):
            self.next()
        fn = Function(name, is_entry, params, {}, [], returns=returns, line=line)
        if self.accept(";"):          # a declaration (.extern .func)
            self.module.functions.setdefault(name, fn)
            return
        _BodyParser(self, fn).block()
        self.module.functions[name] = fn


class _BodyParser:
    """A function body: scopes, register declarations, labels, instructions."""

    def __init__(self, p: _Parser, fn: Function):
        self.p, self.fn = p, fn
        self.scopes: list[dict[str, str]] = []
        self.counter = 0

    def block(self) -> None:
        p = self.p
        p.expect("{")
        self.scopes.append({})
        while not p.accept("}"):
            tok = p.peek()
            if tok is None:
                p.error(f"unexpected end of PTX: function {self.fn.name} lacks its closing '}}'")
            if tok == "{":
                self.block()
            elif tok == ".reg":
                self.reg_decl()
            elif tok in (".shared", ".global", ".const", ".local"):
                self.fn.variables.append(p.variable())    # .local is rejected when this kernel is lowered
            elif tok in (".pragma", ".maxnreg", ".maxntid", ".reqntid", ".minnctapersm", ".param"):
                # .param inside a body declares call arguments (inline.py turns them into registers)
                p.skip_statement()
            elif tok == ";":
                p.next()
            elif p.kind() == "id" and p.peek(1) == ":" and p.peek(2) == ".callprototype":
                p.skip_statement()          # an indirect call's signature: inline.py refuses the call
            elif p.kind() == "id" and p.peek(1) == ":" and tok != "@":
                self.fn.body.append(Label(p.line, p.next()))
                p.next()
            else:
                self.fn.body.append(self.instruction())
        self.scopes.pop()

    def reg_decl(self) -> None:
        p = self.p
        p.next()
        typ = None
        while p.peek().startswith("."):
            d = p.next()[1:]
            if d in TYPE_BITS:
                typ = d
            elif d.startswith("v"):
                p.error(f"vector registers (.reg .{d}) are not supported")
        if typ is None:
            p.error(".reg declaration without a type")
        while True:
            name = p.next()
            if p.accept("<"):
                n = p.integer()
                p.expect(">")
                names = [f"{name}{k}" for k in range(n)]
            else:
                names = [name]
            for nm in names:
                self.declare(nm, typ)
            if not p.accept(","):
                break
        p.expect(";")

    def declare(self, name: str, typ: str) -> None:
        unique = name
        if any(name in s for s in self.scopes) or name in self.fn.regs:
            self.counter += 1
            unique = f"{name}#{self.counter}"
        self.scopes[-1][name] = unique
        self.fn.regs[unique] = typ

    def resolve(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return Reg(scope[name])
        if name in SREGS or name in UNSUPPORTED_SREGS:
            return SpecialReg(name)
        if name.startswith("%"):
            self.p.error(f"undeclared register {name}")
        return Sym(name)

    def instruction(self) -> Instruction:
        p = self.p
        line = p.line
        pred, neg = None, False
        if p.accept("@"):
            neg = p.accept("!")
            r = self.resolve(p.next())
            if not isinstance(r, Reg):
                p.error(f"guard {r} is not a predicate register")
            pred = r
        if p.kind() != "id":
            p.error(f"expected an instruction, found {p.peek()!r}")
        opcode = p.next()
        ops = []
        if p.peek() != ";":
            ops.append(self.operand())
            while p.accept(","):
                ops.append(self.operand())
        p.expect(";")
        return Instruction(line, opcode, ops, pred, neg)

    def operand(self):
        p = self.p
        if p.accept("["):
            if p.kind() == "num" or p.peek() == "-":
                a = Addr(None, p.integer())
            else:
                base = self.resolve(p.next())
                off = 0
                while p.peek() in ("+", "-"):
                    sign = -1 if p.next() == "-" else 1
                    off += sign * p.integer()
                a = Addr(base, off)
            p.expect("]")
            return a
        if p.accept("{"):
            items = [self.operand()]
            while p.accept(","):
                items.append(self.operand())
            p.expect("}")
            return Vec(tuple(items))
        if p.accept("("):            # call argument lists
            items = []
            while not p.accept(")"):
                items.append(self.operand())
                p.accept(",")
            return Vec(tuple(items))
        if p.accept("!"):
            r = self.resolve(p.next())
            return Not(r)
        if p.kind() == "num" or p.peek() == "-":
            neg = p.accept("-")
            v, float_bits = _parse_int(p.next())
            return Imm(-v if neg else v, float_bits)
        tok = p.next()
        if tok == "_":
            return Sink()
        first = self.resolve(tok)
        if p.accept("|"):
            return Pair(first, self.resolve(p.next()))
        if isinstance(first, Sym) and p.peek() == "+" and p.peek(1) and p.kind() is not None:
            # sym+offset outside brackets (mov.u32 %r, arr+8)
            p.next()
            return Addr(first, p.integer())
        return first


def plain_name(name: str) -> str:
    """`_Z6vecAddPiS_i` -> `vecAdd`; `_ZN2ns3fooEv` -> `foo`; others unchanged."""
    m = re.match(r"_Z(\d+)", name)
    if m:
        n = int(m.group(1))
        return name[m.end():m.end() + n]
    if name.startswith("_ZN"):
        rest, last = name[3:], name
        while (m := re.match(r"(\d+)", rest)):
            n = int(m.group(1))
            last, rest = rest[m.end():m.end() + n], rest[m.end() + n:]
        return last
    return name


def parse_ptx(text: str, filename: str = "", cuda: str = "") -> Module:
    """Parse PTX text; raise CompileError("PTX line N: ...") on malformed input. `filename`: the
    CUDA file it came from (Module.where names it when a PTX line has no CUDA line), `cuda` its
    text (messages quote a line's library calls)."""
    module = _Parser(text).parse()
    module.filename, module.cuda = filename, cuda
    return module

"""Parser of the PTX that Nereid writes.

A module is a list of directives (.version, .target, .address_size, extern
function declarations, initialized .global/.const byte or word arrays, the
extern dynamic .shared array) and entries.  An entry has typed parameters,
.reqntid/.maxntid, register declarations, an optional .local array and a
body of labels, instructions and brace-delimited scopes (used around calls,
with their own .param declarations).

Instructions keep their guard predicate, opcode with modifiers split on
'.', and operands: registers, immediates (integers, 0fXXXXXXXX, 0dXXX...),
special registers (%tid.x), symbols, labels, vectors {a, b} and addresses
[base+offset].  Every instruction remembers its line for error messages.
"""
import re


class PtxSyntaxError(Exception):
    pass


class Reg:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


class Imm:
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


class Special:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


class Sym:
    __slots__ = ("name", "offset")

    def __init__(self, name, offset=0):
        self.name, self.offset = name, offset

    def __repr__(self):
        return self.name if not self.offset else f"{self.name}+{self.offset}"


class Vec:
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items

    def __repr__(self):
        return "{" + ", ".join(map(repr, self.items)) + "}"


class Addr:
    __slots__ = ("base", "offset")

    def __init__(self, base, offset):
        self.base, self.offset = base, offset

    def __repr__(self):
        return f"[{self.base!r}+{self.offset}]"


class Sink:
    def __repr__(self):
        return "_"


class Pair:
    """d|p: the two destinations of elect.sync (and of shfl.sync's predicate form)."""
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items

    def __repr__(self):
        return "|".join(map(repr, self.items))


class TensorAddr:
    """[tensorMap, {c0, ...}]: a tensor map's address and a box's coordinates (cp.async.bulk.tensor)."""
    __slots__ = ("base", "coords")

    def __init__(self, base, coords):
        self.base, self.coords = base, coords

    def __repr__(self):
        return f"[{self.base!r}, {self.coords!r}]"


class Instr:
    __slots__ = ("opcode", "mods", "guard", "operands", "line", "text")

    def __init__(self, opcode, mods, guard, operands, line, text):
        self.opcode, self.mods, self.guard, self.operands, self.line, self.text = \
            opcode, mods, guard, operands, line, text

    def __repr__(self):
        return f"line {self.line}: {self.text}"


class Label:
    __slots__ = ("name", "line")

    def __init__(self, name, line):
        self.name, self.line = name, line


class Param:
    def __init__(self, name, type_, size, align):
        self.name, self.type, self.size, self.align = name, type_, size, align


class Variable:
    """A module- or entry-level array: space (.global/.const/.shared/.local),
    element type, count (None for extern unsized), initializer (ints)."""

    def __init__(self, space, name, type_, count, align, init, extern):
        self.space, self.name, self.type, self.count, self.align, self.init, self.extern = \
            space, name, type_, count, align, init, extern

    @property
    def elem_size(self):
        return type_size(self.type)

    @property
    def nbytes(self):
        return (self.count or 0) * self.elem_size


class Entry:
    def __init__(self, name):
        self.name = name
        self.params = []
        self.reqntid = None
        self.maxntid = None
        self.regs = {}  # name -> class type ('.pred', '.b16', '.b32', '.b64', ...)
        self.locals = []
        self.body = []  # Instr and Label, in order
        self.line = 0


class Module:
    def __init__(self):
        self.version = None
        self.target = None
        self.address_size = 64
        self.variables = {}
        self.entries = {}
        self.externs = set()


_TYPE_SIZES = {"pred": 1, "b8": 1, "s8": 1, "u8": 1, "b16": 2, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
               "b32": 4, "s32": 4, "u32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "b64": 8, "s64": 8, "u64": 8,
               "f64": 8}


def type_size(t):
    t = t.lstrip(".")
    if t not in _TYPE_SIZES:
        raise PtxSyntaxError(f"unknown type .{t}")
    return _TYPE_SIZES[t]


def _strip_comments(text):
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            if j < 0:
                raise PtxSyntaxError("unterminated comment")
            out.append("\n" * text.count("\n", i, j))  # keep line numbers
            i = j + 2
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


class _Stmt:
    __slots__ = ("text", "line")

    def __init__(self, text, line):
        self.text, self.line = text, line


def _statements(text):
    """Splits text into statements: 'x;' pieces, labels 'L:', and braces."""
    stmts = []
    line = 1
    i, n = 0, len(text)
    cur = []
    cur_line = None
    depth_paren = 0
    while i < n:
        c = text[i]
        if c == "\n":
            head = "".join(cur).lstrip()
            if head.startswith((".version", ".target", ".address_size")):
                stmts.append(_Stmt(head.strip(), cur_line))  # directives that end at the line's end
                cur, cur_line = [], None
            line += 1
        if c.isspace() and not cur:
            i += 1
            continue
        if cur_line is None:
            cur_line = line
        if c in "()":
            depth_paren += 1 if c == "(" else -1
        if depth_paren == 0 and c == ";":
            stmts.append(_Stmt("".join(cur).strip(), cur_line))
            cur, cur_line = [], None
            i += 1
            continue
        if depth_paren == 0 and c in "{}" and not "".join(cur).strip():
            stmts.append(_Stmt(c, line))
            cur, cur_line = [], None
            i += 1
            continue
        if depth_paren == 0 and c == "{" and _is_entry_header("".join(cur)):
            stmts.append(_Stmt("".join(cur).strip(), cur_line))
            stmts.append(_Stmt("{", line))
            cur, cur_line = [], None
            i += 1
            continue
        if depth_paren == 0 and c == ":" and re.fullmatch(r"\s*[$%\w]+\s*", "".join(cur)) and \
                text[i + 1:i + 2] != ":":
            stmts.append(_Stmt("".join(cur).strip() + ":", cur_line))
            cur, cur_line = [], None
            i += 1
            continue
        cur.append(c)
        i += 1
    if "".join(cur).strip():
        raise PtxSyntaxError(f"line {cur_line}: statement without ';': {''.join(cur).strip()[:80]}")
    return stmts


def _is_entry_header(s):
    return re.search(r"\.(entry|func)\b", s) is not None and ")" in s or \
        re.search(r"\.(reqntid|maxntid)\s+[\d\s,]+$", s.strip()) is not None


_INIT_RE = re.compile(r"=\s*\{(.*)\}\s*$", re.S)


def _parse_variable(text, line):
    m = _INIT_RE.search(text)
    init = None
    if m:
        body = m.group(1).strip()
        init = [int(x, 0) for x in body.replace("\n", " ").split(",") if x.strip()]
        text = text[:m.start()]
    toks = text.split()
    extern = "extern" in [t.lstrip(".") for t in toks]
    space = next((t for t in toks if t in (".global", ".const", ".shared", ".local")), None)
    align = 1
    type_ = None
    name = None
    count = None
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == ".align":
            align = int(toks[i + 1])
            i += 2
            continue
        if t.startswith(".") and t.lstrip(".") in _TYPE_SIZES:
            type_ = t
        elif not t.startswith("."):
            m2 = re.fullmatch(r"([\w$]+)(?:\[(\d*)\])?", t)
            if not m2:
                raise PtxSyntaxError(f"line {line}: cannot parse declaration '{text.strip()}'")
            name = m2.group(1)
            if m2.group(2) is not None:
                count = int(m2.group(2)) if m2.group(2) else None
            else:
                count = 1
        i += 1
    if space is None or type_ is None or name is None:
        raise PtxSyntaxError(f"line {line}: cannot parse declaration '{text.strip()}'")
    if init is not None and count is None:
        count = len(init)
    return Variable(space, name, type_, count, align, init, extern)


_REGDECL_RE = re.compile(r"\.reg\s+(\.\w+)\s+(.+)$", re.S)


def _parse_regdecl(entry, text, line):
    m = _REGDECL_RE.match(text)
    if not m:
        raise PtxSyntaxError(f"line {line}: bad register declaration '{text}'")
    cls = m.group(1)
    if cls.lstrip(".") not in _TYPE_SIZES:
        raise PtxSyntaxError(f"line {line}: unknown register type {cls}")
    for part in m.group(2).split(","):
        part = part.strip()
        mm = re.fullmatch(r"(%[\w$]+)<(\d+)>", part)
        if mm:
            for k in range(int(mm.group(2))):
                entry.regs[f"{mm.group(1)}{k}"] = cls
        elif re.fullmatch(r"%[\w$]+", part):
            entry.regs[part] = cls
        else:
            raise PtxSyntaxError(f"line {line}: bad register name '{part}'")


def _parse_params(entry, text, line):
    m = re.search(r"\((.*)\)", text, re.S)
    if not m:
        return
    for p in m.group(1).split(","):
        p = p.strip()
        if not p:
            continue
        toks = p.split()
        if toks[0] != ".param":
            raise PtxSyntaxError(f"line {line}: bad parameter '{p}'")
        align = None
        type_ = None
        name = None
        i = 1
        while i < len(toks):
            if toks[i] == ".align":
                align = int(toks[i + 1])
                i += 2
                continue
            if toks[i].startswith("."):
                type_ = toks[i]
            else:
                name = toks[i]
            i += 1
        mm = re.fullmatch(r"([\w$]+)(?:\[(\d+)\])?", name or "")
        if not mm or type_ is None:
            raise PtxSyntaxError(f"line {line}: bad parameter '{p}'")
        count = int(mm.group(2)) if mm.group(2) else 1
        size = type_size(type_) * count
        entry.params.append(Param(mm.group(1), type_, size, align or type_size(type_)))


# --- operands -------------------------------------------------------------------------------------------
def _split_top(s, sep=","):
    out, depth, cur = [], 0, []
    for c in s:
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        if c == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


_SPECIALS = ("%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid",
             "%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge", "%clock",
             "%clock64", "%globaltimer")


def parse_operand(s, regs):
    s = s.strip()
    if s.startswith("{") and s.endswith("}"):
        return Vec([parse_operand(x, regs) for x in _split_top(s[1:-1])])
    if s.startswith("[") and s.endswith("]"):
        inner = s[1:-1].strip()
        parts = _split_top(inner)
        if len(parts) == 2 and parts[1].startswith("{"):
            coords = parse_operand(parts[1], regs)
            return TensorAddr(parse_operand(parts[0], regs), coords)
        m = re.fullmatch(r"(.+?)\s*\+\s*(-?\s*(?:0x[0-9a-fA-F]+|\d+))", inner)
        off = 0
        if m and not re.fullmatch(r"-?\d+", inner):
            inner, off = m.group(1).strip(), int(m.group(2).replace(" ", ""), 0)
        else:
            m = re.fullmatch(r"(.+?)\s*-\s*(0x[0-9a-fA-F]+|\d+)", inner)
            if m and not re.fullmatch(r"-?\d+", inner):
                inner, off = m.group(1).strip(), -int(m.group(2), 0)
        return Addr(parse_operand(inner, regs), off)
    if s == "_":
        return Sink()
    if "|" in s and not s.startswith(("{", "[")):
        return Pair([parse_operand(x, regs) for x in s.split("|")])
    if s.startswith("%"):
        if s in regs:
            return Reg(s)
        base = s.split(".")[0]
        if base in _SPECIALS:
            return Special(s)
        raise PtxSyntaxError(f"undeclared register {s}")
    if s.startswith("!%"):
        raise PtxSyntaxError(f"negated operand {s} is not supported")
    if re.fullmatch(r"-?(0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|0[xX][0-9a-fA-F]+|\d+(\.\d*)?([eE][-+]?\d+)?|0[bB][01]+)U?",
                    s):
        return Imm(s)
    if re.fullmatch(r"[A-Za-z_$][\w$]*", s):
        return Sym(s)
    m = re.fullmatch(r"([A-Za-z_$][\w$]*)\s*\+\s*(0x[0-9a-fA-F]+|\d+)", s)
    if m:  # a variable's address plus a constant (mov.u32 %r, nr_smem+112)
        return Sym(m.group(1), int(m.group(2), 0))
    raise PtxSyntaxError(f"cannot parse operand '{s}'")


_INSTR_RE = re.compile(r"(@!?%[\w$]+\s+)?([a-z][\w.:]*)\s*(.*)$", re.S)


def _parse_instr(text, line, regs):
    m = _INSTR_RE.match(text)
    if not m:
        raise PtxSyntaxError(f"line {line}: cannot parse '{text}'")
    guard = None
    if m.group(1):
        g = m.group(1).strip()[1:]
        neg = g.startswith("!")
        g = g.lstrip("!")
        if g not in regs:
            raise PtxSyntaxError(f"line {line}: undeclared predicate {g}")
        guard = (Reg(g), neg)
    parts = m.group(2).split(".")
    opcode, mods = parts[0], parts[1:]
    rest = m.group(3).strip()
    if opcode == "call":
        operands = [x.strip() for x in _split_top(rest)]
    else:
        try:
            operands = [parse_operand(x, regs) for x in _split_top(rest)] if rest else []
        except PtxSyntaxError as e:
            raise PtxSyntaxError(f"line {line}: {e}: '{text}'") from None
    return Instr(opcode, mods, guard, operands, line, " ".join(text.split()))


# --- functions: inlined at their calls ----------------------------------------------------------------------
_FUNC_RE = re.compile(r"(?:\.visible\s+|\.weak\s+)?\.func\s*(\(([^)]*)\))?\s*([\w$]+)\s*\(([^)]*)\)\s*\{")
_CALL_RE = re.compile(r"^(\s*)call(?:\.uni)?\s+(?:\(([^)]*)\)\s*,\s*)?([\w$]+)\s*(?:,\s*\(([^)]*)\))?\s*;",
                      re.M)


def _reg_params(text):
    """[(class, name)] of a function's parameters: '.reg .b32 nr_a0' gives ('.b32', 'nr_a0');
    '.param .b32 nr_a0' and '.param .align 8 .b8 nr_ret[16]' give ('.param', name)."""
    out = []
    for p in (x.strip() for x in (text or "").split(",")):
        if not p:
            continue
        toks = p.split()
        if len(toks) == 3 and toks[0] == ".reg":
            out.append((toks[1], toks[2]))
        elif toks[0] == ".param":
            out.append((".param", re.sub(r"\[.*$", "", toks[-1])))
        else:
            raise PtxSyntaxError(f"function parameter '{p}': only .reg and .param parameters are simulated")
    return out


def _body_end(text, start):
    """The index of the '}' closing the brace at text[start - 1]."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise PtxSyntaxError("a function body without its closing brace")


def _rename_body(pre, body):
    """A callee's body with its registers, labels and own call-scope .param variables
    (nr_pK, nr_rets) renamed apart for one inlined call."""
    body = re.sub(r"%([A-Za-z_$][\w$]*)", lambda mm: mm.group(0) if mm.group(0).split(".")[0] in _SPECIALS
                  or mm.group(1).startswith(pre) else "%" + pre + mm.group(1), body)
    body = re.sub(r"(?<![\w$])(\$L\d+)\b", lambda mm: "$" + pre + mm.group(1)[1:], body)
    return re.sub(r"(?<![\w$%])(nr_p\d+|nr_rets)\b", lambda mm: pre + mm.group(1), body)


def _inline_param_call(indent, pre, name, f_rets, f_params, f_body, rets, args):
    """A call of a function taking .param parameters and returning a .param array: the body
    reads the caller's argument variables and writes its result variable in their place."""
    if len(args) != len(f_params) or len(rets) != len(f_rets):
        raise PtxSyntaxError(f"call of {name}: {len(args)} arguments and {len(rets)} results for "
                             f"{len(f_params)} and {len(f_rets)}")
    body = _rename_body(pre, f_body)
    mapping = {n: a for (_, n), a in zip(f_params + f_rets, args + rets)}
    body = re.sub(r"(?<![\w$%])(nr_a\d+|nr_ret)\b", lambda mm: mapping.get(mm.group(1), mm.group(1)), body)
    end = f"$Lend_{pre[:-1]}"
    body = re.sub(r"^(\s*)(@!?%[\w$]+\s+)?ret\s*;", lambda mm: f"{mm.group(1)}{mm.group(2) or ''}bra.uni {end};",
                  body, flags=re.M)
    return "\n".join([indent + "{", body, f"{end}:", indent + "}"])


def _inline_funcs(text):
    """PTX with every call of a function defined in the module replaced by the
    function's body (registers and labels renamed per call, parameters and
    results moved through registers, ret a branch to the end): the simulator
    then runs the calls as the code around them.  Nereid's functions take and
    return registers (.reg parameters) and are called by whole warps
    (call.uni)."""
    funcs = {}
    count = [0]

    def expand(body):
        def call(m):
            indent, rets, name, args = m.group(1), m.group(2), m.group(3), m.group(4)
            if name not in funcs:
                return m.group(0)  # an extern (vprintf, __assertfail): the simulator's own
            f_rets, f_params, f_body = funcs[name]
            rets = [x.strip() for x in (rets or "").split(",") if x.strip()]
            args = [x.strip() for x in (args or "").split(",") if x.strip()]
            if len(rets) != len(f_rets) or len(args) != len(f_params):
                raise PtxSyntaxError(f"call of {name}: {len(args)} arguments and {len(rets)} results for "
                                     f"{len(f_params)} and {len(f_rets)}")
            count[0] += 1
            pre = f"inl{count[0]}_"
            if all(c == ".param" for c, _ in f_rets + f_params):
                return _inline_param_call(indent, pre, name, f_rets, f_params, f_body, rets, args)
            names = {n: "%" + pre + n.lstrip("%") for _, n in f_rets + f_params}

            def rename(t):
                t = re.sub(r"(?<![\w$%])(nr_[ar]v?\d+)\b", lambda mm: names.get(mm.group(1), mm.group(1)), t)
                t = re.sub(r"%([A-Za-z_$][\w$]*)", lambda mm: mm.group(0) if mm.group(0).split(".")[0] in _SPECIALS
                           or mm.group(1).startswith(pre) else "%" + pre + mm.group(1), t)
                t = re.sub(r"(?<![\w$])(\$L\d+)\b", lambda mm: "$" + pre + mm.group(1)[1:], t)
                return t

            end = f"$Lend_{pre[:-1]}"
            body = rename(f_body)
            body = re.sub(r"^(\s*)(@!?%[\w$]+\s+)?ret\s*;", lambda mm: f"{mm.group(1)}{mm.group(2) or ''}bra.uni {end};",
                          body, flags=re.M)
            out = [indent + "{"]
            for cls, n in f_rets + f_params:
                out.append(f"{indent}.reg {cls} {names[n]};")
            for (cls, n), a in zip(f_params, args):
                out.append(f"{indent}mov{'.pred' if cls == '.pred' else '.' + cls.lstrip('.').replace('f', 'b')} "
                           f"{names[n]}, {a};")
            out.append(body)
            out.append(f"{end}:")
            for (cls, n), r in zip(f_rets, rets):
                out.append(f"{indent}mov{'.pred' if cls == '.pred' else '.' + cls.lstrip('.').replace('f', 'b')} "
                           f"{r}, {names[n]};")
            out.append(indent + "}")
            return "\n".join(out)
        return _CALL_RE.sub(call, body)

    out, pos = [], 0
    while True:
        m = _FUNC_RE.search(text, pos)
        if not m:
            out.append(expand(text[pos:]))
            break
        end = _body_end(text, m.end())
        out.append(expand(text[pos:m.start()]))
        funcs[m.group(3)] = (_reg_params(m.group(2)), _reg_params(m.group(4)), expand(text[m.end():end]))
        pos = end + 1
    return "".join(out)


def parse(text):
    """Parses PTX text into a Module."""
    text = _inline_funcs(_strip_comments(text))
    mod = Module()
    stmts = _statements(text)
    i = 0
    while i < len(stmts):
        st = stmts[i]
        t = st.text
        if t.startswith(".version"):
            mod.version = t.split()[1]
        elif t.startswith(".target"):
            mod.target = t.split()[1].rstrip(",")
        elif t.startswith(".address_size"):
            mod.address_size = int(t.split()[1])
        elif re.match(r"(\.extern\s+|\.visible\s+|\.weak\s+)*\.func\b", t):
            m = re.search(r"\.func\s*(?:\([^)]*\))?\s*([\w$]+)", t)
            if m:
                mod.externs.add(m.group(1))
        elif re.match(r"(\.extern\s+|\.visible\s+)*\.(global|const|shared)\b", t):
            v = _parse_variable(t, st.line)
            mod.variables[v.name] = v
        elif re.match(r"(\.visible\s+|\.weak\s+)*\.entry\b", t):
            i = _parse_entry(mod, stmts, i)
            continue
        elif t in ("{", "}"):
            raise PtxSyntaxError(f"line {st.line}: unexpected '{t}' at module level")
        else:
            raise PtxSyntaxError(f"line {st.line}: unsupported module-level statement '{t[:80]}'")
        i += 1
    return mod


def _parse_entry(mod, stmts, i):
    st = stmts[i]
    header = st.text
    m = re.search(r"\.entry\s+([\w$]+)", header)
    entry = Entry(m.group(1))
    entry.line = st.line
    _parse_params(entry, header, st.line)
    tail = header[header.rfind(")") + 1:] if ")" in header else ""
    for kind in ("reqntid", "maxntid"):
        mm = re.search(r"\." + kind + r"\s+([\d\s,]+)", tail)
        if mm:
            dims = [int(x) for x in mm.group(1).replace(" ", "").split(",") if x]
            setattr(entry, kind, tuple(dims + [1] * (3 - len(dims))))
    i += 1
    while i < len(stmts) and stmts[i].text != "{":
        t = stmts[i].text  # performance directives on their own statements
        mm = re.match(r"\.(reqntid|maxntid)\s+([\d\s,]+)", t)
        if mm:
            dims = [int(x) for x in mm.group(2).replace(" ", "").split(",") if x]
            setattr(entry, mm.group(1), tuple(dims + [1] * (3 - len(dims))))
        i += 1
    if i >= len(stmts):
        raise PtxSyntaxError(f"line {st.line}: entry {entry.name} has no body")
    depth = 0
    while i < len(stmts):
        s = stmts[i]
        t = s.text
        i += 1
        if t == "{":
            depth += 1
            entry.body.append(Label("{", s.line))
            continue
        if t == "}":
            depth -= 1
            entry.body.append(Label("}", s.line))
            if depth == 0:
                break
            continue
        if t.endswith(":"):
            entry.body.append(Label(t[:-1], s.line))
            continue
        if t.startswith(".reg"):
            _parse_regdecl(entry, t, s.line)
            continue
        if t.startswith(".local") or t.startswith(".shared"):
            entry.locals.append(_parse_variable(t, s.line))
            continue
        if t.startswith(".param"):
            continue  # call-scope parameters: handled by the call itself
        if t.startswith(".pragma"):
            continue
        entry.body.append(_parse_instr(t, s.line, entry.regs))
    entry.body = [x for x in entry.body if not (isinstance(x, Label) and x.name in "{}")]
    mod.entries[entry.name] = entry
    return i

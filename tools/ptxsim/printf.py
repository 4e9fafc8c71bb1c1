"""vprintf as the CUDA device runtime does it: a C format string and an
argument buffer where every argument is aligned to its size (4 bytes for
int-sized conversions, 8 for long long, double and pointers)."""
import re
import struct

_CONV = re.compile(rb"%([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*))?(hh|h|ll|l|L|z|j|t)?([diouxXeEfFgGaAcspn%])")


def format_printf(fmt, read):
    """fmt: bytes; read(offset, n) -> bytes of the argument buffer."""
    out = []
    pos = 0
    off = 0

    def arg(size):
        nonlocal off
        off = (off + size - 1) // size * size
        raw = read(off, size)
        off += size
        return raw

    for m in _CONV.finditer(fmt):
        out.append(fmt[pos:m.start()].decode("latin-1"))
        pos = m.end()
        flags, width, prec, length, conv = m.groups()
        flags = (flags or b"").decode()
        conv = conv.decode()
        if conv == "%":
            out.append("%")
            continue
        if width == b"*":
            width = str(struct.unpack("<i", arg(4))[0]).encode()
        if prec == b"*":
            prec = str(struct.unpack("<i", arg(4))[0]).encode()
        spec = "%" + flags + (width.decode() if width else "") + ("." + prec.decode() if prec is not None else "")
        length = (length or b"").decode()
        if conv in "diouxXc":
            if length in ("ll", "l", "z", "j", "t"):
                raw = arg(8)
                v = struct.unpack("<q" if conv in "di" else "<Q", raw)[0]
            else:
                raw = arg(4)
                v = struct.unpack("<i" if conv in "di" else "<I", raw)[0]
                if length == "h":
                    v = (v & 0xFFFF) - (0x10000 if conv in "di" and v & 0x8000 else 0)
                elif length == "hh":
                    v = (v & 0xFF) - (0x100 if conv in "di" and v & 0x80 else 0)
            if conv == "c":
                out.append((spec + "c") % chr(v & 0xFF))
            else:
                out.append((spec + ("d" if conv == "i" else "o" if conv == "o" else conv if conv in "xX" else "d"))
                           % (v if conv != "u" else v))
        elif conv in "eEfFgGaA":
            v = struct.unpack("<d", arg(8))[0]
            if conv in "aA":
                out.append(v.hex())
            else:
                s = (spec + conv) % v
                out.append(s)
        elif conv == "p":
            v = struct.unpack("<Q", arg(8))[0]
            out.append("0x%x" % v)
        elif conv == "s":
            v = struct.unpack("<Q", arg(8))[0]
            out.append(f"<string at 0x{v:x}>")
        else:
            out.append(m.group(0).decode("latin-1"))
    out.append(fmt[pos:].decode("latin-1"))
    return "".join(out)

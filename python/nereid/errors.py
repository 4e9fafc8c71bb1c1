"""Exceptions raised by Nereid."""


class CompilationError(Exception):
    """A kernel failed to compile.

    ``str(e)`` shows every diagnostic as ``file:line:col: error: message`` with
    the source line and a caret.  ``e.diagnostics`` is a list of
    ``Diagnostic`` tuples; ``e.filename``, ``e.lineno``, ``e.col`` and
    ``e.message`` describe the first error."""

    def __init__(self, text, diagnostics=()):
        super().__init__(text)
        self.text = text
        self.diagnostics = [Diagnostic(*d) for d in diagnostics]
        first = next((d for d in self.diagnostics if d.severity == "error"), None)
        self.filename = first.file if first else None
        self.lineno = first.line if first else None
        self.col = first.col if first else None
        self.message = first.message if first else text

    def __str__(self):
        return self.text.rstrip("\n")


class LaunchError(RuntimeError):
    """A kernel faulted while running: an out-of-bounds access, a failed
    device_assert, ...  The message names the kernel's source line, the
    program id and the element."""

    def __init__(self, text, diagnostics=()):
        super().__init__(text)
        self.text = text
        self.diagnostics = [Diagnostic(*d) for d in diagnostics]

    def __str__(self):
        return self.text.rstrip("\n")


class Diagnostic(tuple):
    """(severity, file, line, col, message, source_line)"""

    def __new__(cls, severity, file, line, col, message, source_line):
        return super().__new__(cls, (severity, file, line, col, message, source_line))

    severity = property(lambda s: s[0])
    file = property(lambda s: s[1])
    line = property(lambda s: s[2])
    col = property(lambda s: s[3])
    message = property(lambda s: s[4])
    source_line = property(lambda s: s[5])


class OutOfResources(Exception):
    """A kernel needs more of a device resource than the device has (shared
    memory per block, registers per block); raised before the launch.
    ``required``, ``limit`` and ``name`` say which and how much."""

    def __init__(self, required, limit, name, kernel=None):
        self.required = required
        self.limit = limit
        self.name = name
        self.kernel = kernel
        who = f"kernel '{kernel}'" if kernel else "the kernel"
        hint = ("use smaller blocks or fewer stages" if name == "shared memory"
                else "use fewer warps or smaller blocks")
        super().__init__(f"out of resources: {who} needs {required} {'bytes of ' if name == 'shared memory' else ''}"
                         f"{name}, over the device's limit of {limit}; {hint}")

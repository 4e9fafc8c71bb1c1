import triton
import triton.language as tl


@triton.jit
def first(x_ptr):
    for i in range(4):
        break


def host_helper(x):
    # Host code may use anything; it is never reported.
    return {k: v for k, v in x}


class Launcher:
    @triton.jit
    def not_a_kernel(self):
        break


@triton.jit
def second(x_ptr):
    tl.store(x_ptr, lambda: 0)


@triton.jit
def third(x_ptr):
    tl.store(x_ptr, 1)


if __name__ == "__main__":
    print({i for i in range(3)})

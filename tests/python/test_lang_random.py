"""Random numbers: Philox 4x32-10 with Triton's seeding and offset rules.

tl.philox against the known-answer vectors of the Philox 4x32-10
specification (Salmon et al., "Parallel random numbers: as easy as 1, 2,
3"; the vectors its reference implementation ships), and a reference
written here from that specification; tl.randint / randint4x / rand /
rand4x / randn / randn4x against Triton's definitions on top of it, with
32- and 64-bit seeds and offsets, masked tails, and the 64-bit counter
variant (tl.philox on uint64 counters)."""
import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from conftest import poisoned

M32, M64 = (1 << 32) - 1, (1 << 64) - 1


def philox_ref(c, k, rounds=10, wide=False):
    """Philox 4xW: the round (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)), keys bumped by the Weyl constants."""
    if wide:
        m, sh = M64, 64
        m0, m1, w0, w1 = 0xD2E7470EE14C6C93, 0xCA5A826395121157, 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B
    else:
        m, sh = M32, 32
        m0, m1, w0, w1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
    c0, c1, c2, c3 = c
    k0, k1 = k
    for _ in range(rounds):
        p0, p1 = m0 * c0, m1 * c2
        c0, c1, c2, c3 = ((p1 >> sh) ^ c1 ^ k0) & m, p1 & m, ((p0 >> sh) ^ c3 ^ k1) & m, p0 & m
        k0, k1 = (k0 + w0) & m, (k1 + w1) & m
    return c0, c1, c2, c3


# (counter, key, result) of the Philox 4x32-10 specification's known-answer tests
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((M32, M32, M32, M32), (M32, M32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


@triton.jit
def philox_kernel(C, S, OUT, N_ROUNDS: tl.constexpr):
    i = tl.arange(0, 4)
    seed = tl.load(S + i)
    c0 = tl.load(C + i * 4)
    c1 = tl.load(C + i * 4 + 1)
    c2 = tl.load(C + i * 4 + 2)
    c3 = tl.load(C + i * 4 + 3)
    a, b, c, d = tl.philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS)
    tl.store(OUT + i * 4, a)
    tl.store(OUT + i * 4 + 1, b)
    tl.store(OUT + i * 4 + 2, c)
    tl.store(OUT + i * 4 + 3, d)


def test_philox_known_answers():
    cnt = np.zeros((4, 4), np.uint32)
    seed = np.zeros(4, np.uint64)
    for j, (c, k, _r) in enumerate(KAT):
        cnt[j] = c
        seed[j] = k[0] | k[1] << 32
    cnt[3] = [1, 2, 3, 4]
    seed[3] = 0xDEADBEEF12345678
    out = poisoned((4, 4), np.uint32)
    philox_kernel[(1,)](cnt, seed, out, N_ROUNDS=10)
    for j, (_c, _k, r) in enumerate(KAT):
        assert tuple(int(v) for v in out[j]) == r, [hex(v) for v in out[j]]
    assert tuple(int(v) for v in out[3]) == philox_ref((1, 2, 3, 4), (0x12345678, 0xDEADBEEF))


@pytest.mark.parametrize("rounds", [7, 10])
def test_philox_random_counters(rng, rounds):
    cnt = rng.integers(0, 1 << 32, (4, 4), dtype=np.uint64).astype(np.uint32)
    seed = rng.integers(0, 1 << 63, 4, dtype=np.uint64)
    out = poisoned((4, 4), np.uint32)
    philox_kernel[(1,)](cnt, seed, out, N_ROUNDS=rounds)
    for j in range(4):
        k = (int(seed[j]) & M32, int(seed[j]) >> 32)
        assert tuple(int(v) for v in out[j]) == philox_ref(tuple(int(v) for v in cnt[j]), k, rounds)


@triton.jit
def philox64_kernel(C, S, OUT):
    i = tl.arange(0, 4)
    seed = tl.load(S + i)
    a, b, c, d = tl.philox(seed, tl.load(C + i * 4), tl.load(C + i * 4 + 1), tl.load(C + i * 4 + 2),
                           tl.load(C + i * 4 + 3))
    tl.store(OUT + i * 4, a)
    tl.store(OUT + i * 4 + 1, b)
    tl.store(OUT + i * 4 + 2, c)
    tl.store(OUT + i * 4 + 3, d)


def test_philox_64bit_counters(rng):
    cnt = rng.integers(0, 1 << 63, (4, 4), dtype=np.uint64) * 2 + 1
    seed = rng.integers(0, 1 << 63, 4, dtype=np.uint64)
    out = poisoned((4, 4), np.uint64)
    philox64_kernel[(1,)](cnt, seed, out)
    for j in range(4):
        want = philox_ref(tuple(int(v) for v in cnt[j]), (int(seed[j]), 0), 10, wide=True)
        assert tuple(int(v) for v in out[j]) == want


@triton.jit
def random_kernel(I, I4, F, F4, NR, NR4, seed, n, BLOCK: tl.constexpr, OFF64: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    if OFF64:
        o = offs.to(tl.int64) + 4294967290  # crosses 2**32: the high word is the second counter
    else:
        o = offs
    tl.store(I + offs, tl.randint(seed, o), mask=m)
    a, b, c, d = tl.randint4x(seed, o)
    tl.store(I4 + offs, a, mask=m)
    tl.store(I4 + n + offs, b, mask=m)
    tl.store(I4 + 2 * n + offs, c, mask=m)
    tl.store(I4 + 3 * n + offs, d, mask=m)
    tl.store(F + offs, tl.rand(seed, o), mask=m)
    u1, u2, u3, u4 = tl.rand4x(seed, o)
    tl.store(F4 + offs, u1, mask=m)
    tl.store(F4 + n + offs, u2, mask=m)
    tl.store(F4 + 2 * n + offs, u3, mask=m)
    tl.store(F4 + 3 * n + offs, u4, mask=m)
    tl.store(NR + offs, tl.randn(seed, o), mask=m)
    n1, n2, n3, n4 = tl.randn4x(seed, o)
    tl.store(NR4 + offs, n1, mask=m)
    tl.store(NR4 + n + offs, n2, mask=m)
    tl.store(NR4 + 2 * n + offs, n3, mask=m)
    tl.store(NR4 + 3 * n + offs, n4, mask=m)


def _uniform(x):
    """Triton's uint_to_uniform_float for 32-bit words, in float32 as the kernel computes it."""
    i = np.asarray(x, np.uint32).view(np.int32).astype(np.int64)
    i = np.where(i < 0, -i - 1, i)
    return i.astype(np.float32) * np.float32(4.6566127342e-10)


def _normal_pair(u1, u2):
    """Box-Muller in float64: (z1, z2) and each one's error bound.  The kernel's log is the
    fast lg2.approx (as Triton's), whose absolute error of up to about 2^-21 in log2(u1) is
    large next to -2 ln(u1) when u1 is near 1: the bound carries it through the square root."""
    u1 = np.maximum(np.float32(1e-7), u1).astype(np.float64)
    th = (np.float32(6.283185307179586) * u2).astype(np.float64)
    r2 = -2.0 * np.log(u1)
    r = np.sqrt(r2)
    dr = np.sqrt(r2 + 2.0 * np.log(2.0) * 2.0 ** -21 + 1e-6 * r2) - r
    c, s = np.cos(th), np.sin(th)
    return (r * c, 1e-5 * (1 + r) + np.abs(c) * dr), (r * s, 1e-5 * (1 + r) + np.abs(s) * dr)


def _assert_normal(got, pairs):
    want = np.stack([p[0] for p in pairs])
    bound = np.stack([p[1] for p in pairs])
    err = np.abs(got.astype(np.float64) - want.reshape(got.shape))
    assert np.all(err <= bound.reshape(got.shape)), float((err / bound.reshape(got.shape)).max())


@pytest.mark.parametrize("seed", [0, 12345, 2 ** 40 + 17, 2 ** 63 + 5])
@pytest.mark.parametrize("off64", [False, True])
def test_random_functions(seed, off64):
    n, BLOCK = 300, 128
    outs_i = [poisoned(n, np.uint32), poisoned((4, n), np.uint32)]
    outs_f = [poisoned(n, np.float32), poisoned((4, n), np.float32), poisoned(n, np.float32),
              poisoned((4, n), np.float32)]
    random_kernel[(triton.cdiv(n, BLOCK),)](outs_i[0], outs_i[1], outs_f[0], outs_f[1], outs_f[2], outs_f[3], seed, n,
                                            BLOCK=BLOCK, OFF64=off64)
    k = (seed & M32, (seed >> 32) & M32)
    offs = [i + (4294967290 if off64 else 0) for i in range(n)]
    words = np.array([philox_ref((o & M32, o >> 32, 0, 0), k) for o in offs], np.uint64).astype(np.uint32).T
    assert np.array_equal(outs_i[0], words[0])
    assert np.array_equal(outs_i[1], words)
    u = _uniform(words)
    assert np.array_equal(outs_f[0], u[0])
    assert np.array_equal(outs_f[1], u)
    assert np.all((u >= 0) & (u < 1))
    z1, z2 = _normal_pair(u[0], u[1])
    z3, z4 = _normal_pair(u[2], u[3])
    _assert_normal(outs_f[2], [z1])
    _assert_normal(outs_f[3], [z1, z2, z3, z4])


def test_random_is_deterministic_and_seed_dependent():
    n = 256
    a, b, c = (poisoned(n, np.float32) for _ in range(3))
    dummy_i = [poisoned(n, np.uint32), poisoned((4, n), np.uint32)]
    extra = [poisoned((4, n), np.float32), poisoned(n, np.float32), poisoned((4, n), np.float32)]
    for out, s in ((a, 1), (b, 1), (c, 2)):
        random_kernel[(2,)](dummy_i[0], dummy_i[1], out, extra[0], extra[1], extra[2], s, n, BLOCK=128, OFF64=False)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert abs(float(a.mean()) - 0.5) < 0.1

"""hk.attention_with_kvcache / hk.flash_attn.flash_attn_with_kvcache (flash-attention's keyword names): paged and
contiguous caches against a float64 reference, and the refusals."""
import pytest
import torch

import hk
import hk.flash_attn as fa
from conftest import assert_close, attention_reference, rand, rotary_reference, rotary_tables


def _reference(q, k_cache, v_cache, seqlens, block_table, causal, window):
    """Each sequence's keys gathered from its pages, then the float64 attention of attention_reference."""
    outs, lses = [], []
    for b in range(q.shape[0]):
        n = int(seqlens[b])
        if block_table is None:
            k, v = k_cache[b, :n], v_cache[b, :n]
        else:
            page = k_cache.shape[1]
            rows = [(int(block_table[b, j // page]), j % page) for j in range(n)]
            k = torch.stack([k_cache[p, r] for p, r in rows]) if rows else k_cache[0, :0]
            v = torch.stack([v_cache[p, r] for p, r in rows]) if rows else v_cache[0, :0]
        o, lse = attention_reference(q[b:b + 1], k[None], v[None], causal=causal, window=window)
        outs.append(o), lses.append(lse)
    return torch.cat(outs), torch.cat(lses)


def _cache_layout(b, capacity, page, g):
    """The leading dims of a cache of `capacity` keys per sequence, and its block table: pages of `page` rows, one
    spare page no one uses and the pages shuffled; contiguous (b, capacity) rows and no table when page is 0."""
    if not page:
        return (b, capacity), None
    per_seq = (capacity + page - 1) // page
    table = torch.randperm(b * per_seq + 1, generator=g)[:b * per_seq].to(torch.int32).reshape(b, per_seq)
    return (b * per_seq + 1, page), table


@pytest.mark.parametrize("page", [0, 1, 16])
@pytest.mark.parametrize("causal", [False, True])
def test_with_kvcache_matches_reference(page, causal):
    g = torch.Generator().manual_seed(3)
    dtype, b, sq, hq, hkv, d = torch.bfloat16, 3, 2, 8, 2, 64
    seqlens = torch.tensor([0, 17, 40], dtype=torch.int32)
    q = rand(b, sq, hq, d, dtype=dtype, generator=g)
    rows, block_table = _cache_layout(b, 48, page, g)
    k_cache, v_cache = (rand(*rows, hkv, d, dtype=dtype, generator=g) for _ in range(2))
    out, lse = fa.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=seqlens, block_table=block_table,
                                          causal=causal, return_softmax_lse=True)
    want, want_lse = _reference(q, k_cache, v_cache, seqlens, block_table, causal, (-1, -1))
    assert_close(out, want, dtype, what="out")
    finite = torch.isfinite(want_lse)
    assert torch.equal(torch.isfinite(lse), finite)
    assert torch.allclose(lse[finite].double(), want_lse[finite], atol=1e-4)
    assert torch.equal(hk.attention_with_kvcache(q, k_cache, v_cache, cache_seqlens=seqlens, block_table=block_table,
                                                 causal=causal), out)


def test_with_kvcache_refusals():
    q = torch.zeros(1, 1, 4, 64, dtype=torch.bfloat16)
    cache = torch.zeros(1, 8, 1, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="rotary_cos and rotary_sin come together"):
        fa.flash_attn_with_kvcache(q, cache, cache, rotary_cos=torch.zeros(8, 32), cache_seqlens=4)
    with pytest.raises(ValueError, match="they need k and v"):
        fa.flash_attn_with_kvcache(q, cache, cache, rotary_cos=torch.zeros(8, 32), rotary_sin=torch.zeros(8, 32),
                                   cache_seqlens=4)
    new = torch.zeros(1, 2, 1, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="plus the 2 appended keys is outside the cache's capacity"):
        fa.flash_attn_with_kvcache(q, cache, cache.clone(), k=new, v=new.clone(), cache_seqlens=7)
    with pytest.raises(ValueError, match="must have its dtype"):
        fa.flash_attn_with_kvcache(q, cache, cache.clone(), k=new.half(), v=new.half(), cache_seqlens=4)
    with pytest.raises(ValueError, match="the rotary tables have 5 rows, but position 5"):
        fa.flash_attn_with_kvcache(q, cache, cache.clone(), k=new, v=new.clone(), cache_seqlens=4,
                                   rotary_cos=torch.zeros(5, 32), rotary_sin=torch.zeros(5, 32))
    with pytest.raises(ValueError, match="k_cache overlaps k_new"):
        fa.flash_attn_with_kvcache(q, cache, cache.clone(), k=cache[:, 4:6], v=new, cache_seqlens=0)
    with pytest.raises(ValueError, match="cache_seqlens must be int32"):
        fa.flash_attn_with_kvcache(q, cache, cache, cache_seqlens=torch.tensor([4], dtype=torch.int64))
    with pytest.raises(ValueError, match="outside the cache's capacity"):
        fa.flash_attn_with_kvcache(q, cache, cache, cache_seqlens=9)


@pytest.mark.parametrize("page", [0, 16])
def test_with_kvcache_fp8(page):
    """FP8 caches in the device's e4m3 with flash-attention's k_descale (per KV head) / v_descale (per tensor)."""
    fp8 = torch.float8_e4m3fnuz if hk._C.device_arch() == "gfx942" else torch.float8_e4m3fn
    g = torch.Generator().manual_seed(4)
    b, sq, hq, hkv, d = 2, 2, 8, 2, 128
    seqlens = torch.tensor([5, 40], dtype=torch.int32)
    q = rand(b, sq, hq, d, dtype=torch.bfloat16, generator=g)
    rows, block_table = _cache_layout(b, 48, page, g)
    k_cache, v_cache = ((torch.randn(*rows, hkv, d, dtype=torch.float64, generator=g) * 60).clamp(-200, 200).to(fp8)
                        for _ in range(2))
    k_descale = torch.tensor([1 / 256, 1.25 / 256], dtype=torch.float32)
    v_descale = torch.tensor([1 / 128], dtype=torch.float32)
    out = fa.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=seqlens, block_table=block_table, causal=True,
                                     k_descale=k_descale, v_descale=v_descale)
    kf = k_cache.to(torch.float64) * k_descale.double().view(1, 1, hkv, 1)
    vf = v_cache.to(torch.float64) * v_descale.double()
    want, _ = _reference(q, kf, vf, seqlens, block_table, True, (-1, -1))
    assert_close(out, want, torch.bfloat16, what="out")
    other = torch.float8_e4m3fn if fp8 == torch.float8_e4m3fnuz else torch.float8_e4m3fnuz
    with pytest.raises(ValueError, match="this device's e4m3"):
        hk.attention_with_kvcache(q, k_cache.to(other), v_cache.to(other), cache_seqlens=seqlens, block_table=block_table)
    with pytest.raises(ValueError, match="positive finite descale"):
        hk.attention_with_kvcache(q, k_cache, v_cache, cache_seqlens=seqlens, block_table=block_table,
                                  k_descale=torch.tensor([-1.0]))
    with pytest.raises(ValueError, match="must hold 1 \\(per tensor\\), 2 \\(per KV head\\)"):
        hk.attention_with_kvcache(q, k_cache, v_cache, cache_seqlens=seqlens, block_table=block_table,
                                  v_descale=torch.ones(3))
    with pytest.raises(ValueError, match="fp8 caches only"):
        hk.attention_with_kvcache(q, q, q, cache_seqlens=2, k_descale=k_descale)


@pytest.mark.parametrize("page", [0, 16])
@pytest.mark.parametrize("rotary", [None, "half", "interleaved"])
def test_with_kvcache_append(page, rotary):
    """k / v appended in place (flash-attention's keyword names), rotary of q and the new keys at flash-attention's
    positions; the cache rows written checked, the result against the float64 reference over the grown caches."""
    g = torch.Generator().manual_seed(5)
    dtype, b, sq, hq, hkv, d, new, rdim = torch.bfloat16, 3, 2, 8, 2, 64, 3, 32
    causal = rotary == "half"  # q at cache_seqlens + i (causal), or every query at cache_seqlens
    seqlens = torch.tensor([0, 14, 29], dtype=torch.int32)
    q = rand(b, sq, hq, d, dtype=dtype, generator=g)
    k_new, v_new = (rand(b, new, hkv, d, dtype=dtype, generator=g) for _ in range(2))
    rows, block_table = _cache_layout(b, 32, page, g)
    k_cache, v_cache = (rand(*rows, hkv, d, dtype=dtype, generator=g) for _ in range(2))
    k_before, v_before = k_cache.clone(), v_cache.clone()
    cos, sin = rotary_tables(40, rdim) if rotary else (None, None)
    out, lse = fa.flash_attn_with_kvcache(q, k_cache, v_cache, k=k_new, v=v_new, rotary_cos=cos, rotary_sin=sin,
                                          cache_seqlens=seqlens, block_table=block_table, causal=causal,
                                          rotary_interleaved=rotary == "interleaved", return_softmax_lse=True)
    # The rows written: k_new (rotated at cache_seqlens + i) and v_new at cache_seqlens[b] + i; nothing else.
    want_k, want_v = k_before.clone(), v_before.clone()
    q_ref = q.to(torch.float64)
    for s in range(b):
        n = int(seqlens[s])
        kn = rotary_reference(k_new[s:s + 1], cos, sin, rotary == "interleaved", offset=n)[0] if rotary \
            else k_new[s].to(torch.float64)
        if rotary:
            q_ref[s:s + 1] = rotary_reference(q[s:s + 1], cos, sin, rotary == "interleaved", offset=n) if causal else \
                rotary_reference(q[s:s + 1].transpose(0, 1), cos, sin, rotary == "interleaved", offset=n).transpose(0, 1)
        for i in range(new):
            j = n + i
            pg, row = (int(block_table[s, j // page]), j % page) if page else (s, j)
            want_k[pg, row], want_v[pg, row] = kn[i].to(dtype), v_new[s, i]
            if rotary:  # within one rounding each side of the float64 rotation
                assert torch.allclose(k_cache[pg, row].double(), kn[i], rtol=2 ** -7, atol=2 ** -19)
                want_k[pg, row] = k_cache[pg, row]
    assert torch.equal(v_cache, want_v)
    assert torch.equal(k_cache, want_k)
    want, _ = _reference(q_ref, k_cache.double(), v_cache.double(), seqlens + new, block_table, causal, (-1, -1))
    assert_close(out, want, dtype, what="out")
    assert torch.isfinite(lse).all()


@pytest.mark.parametrize("descale", ["tensor", "head", "batch_head"])
def test_with_kvcache_fp8_descale_shapes(descale):
    """k_descale / v_descale of 1, (Hkv,) and (B, Hkv) (flash-attention 3) entries on the device's e4m3 cache."""
    fp8 = torch.float8_e4m3fnuz if hk._C.device_arch() == "gfx942" else torch.float8_e4m3fn
    g = torch.Generator().manual_seed(6)
    b, sq, hq, hkv, d = 2, 1, 8, 2, 64
    seqlens = torch.tensor([30, 9], dtype=torch.int32)
    q = rand(b, sq, hq, d, dtype=torch.float16, generator=g)
    k_cache, v_cache = ((torch.randn(b, 32, hkv, d, dtype=torch.float64, generator=g) * 60).clamp(-200, 200).to(fp8)
                        for _ in range(2))
    shape = {"tensor": (1,), "head": (hkv,), "batch_head": (b, hkv)}[descale]
    k_descale = (torch.arange(1, 1 + b * hkv, dtype=torch.float32)[:int(torch.tensor(shape).prod())].reshape(shape)
                 / 256)
    v_descale = k_descale.flip(-1) / 2
    out = fa.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=seqlens, k_descale=k_descale,
                                     v_descale=v_descale)
    full = lambda t: t.double().reshape(-1, 1, hkv if t.numel() > 1 else 1, 1).expand(b, 1, hkv, 1)
    kf, vf = k_cache.to(torch.float64) * full(k_descale), v_cache.to(torch.float64) * full(v_descale)
    want, _ = _reference(q, kf, vf, seqlens, None, False, (-1, -1))
    assert_close(out, want, torch.float16, what="out")

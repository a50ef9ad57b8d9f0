/*
 * loom tests: the data oracle of test_allreduce, test_colls and test_nonblocking.
 *
 *   - type kinds (lo_tkind_t) and their MPI datatypes, predefined and derived (lo_dt,
 *     lo_ext), made by lo_setup and freed by lo_free;
 *   - op kinds (lo_okind_t) and their MPI ops (lo_op): predefined ones, a commutative
 *     user op and a non-commutative one;
 *   - lo_gen: element i of rank r's input, lo_apply: the op on two elements (the lower
 *     ranks' on the left), lo_same: do two results agree, lo_mark_data / lo_mask: which
 *     bytes of an element's extent are data (the others must stay untouched).
 *
 * Values are chosen so that exact results do not depend on the grouping of the
 * reduction (small integers, powers of two, products that wrap), and non-commutative
 * ops (2x2 matrices, affine maps) show the rank order.
 *
 * The three tests generate slightly different values (hash, numbering of kinds, the
 * strided type's displacement, a few value rules): each states its variant in the
 * lo_config_t it passes to lo_setup.
 *
 * Header-only (static functions): include it from one .c file per program.
 */
#ifndef LOOM_TEST_ORACLE_H
#define LOOM_TEST_ORACLE_H

#include <math.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
#define LO_UNUSED __attribute__((unused))
#else
#define LO_UNUSED
#endif

/* ------------------------------------------------------------------------- */
/* kinds                                                                     */

typedef enum {
    LO_T_INT,        /* MPI_INT */
    LO_T_INT64,      /* MPI_INT64_T */
    LO_T_FLOAT,      /* MPI_FLOAT */
    LO_T_DOUBLE,     /* MPI_DOUBLE */
    LO_T_DCOMPLEX,   /* MPI_C_DOUBLE_COMPLEX */
    LO_T_VEC,        /* strided: 2 blocks of 2 ints, stride 3, extent 6 ints (see lo_config_t) */
    LO_T_2INT,       /* MPI_2INT */
    LO_T_DOUBLE_INT, /* MPI_DOUBLE_INT */
    LO_T_MAT,        /* 2x2 uint32 matrix: contiguous(4, MPI_UINT32_T) */
    LO_T_PAIR,       /* struct {int32 at 0, int64 at 8}, extent 16: bytes 4..7 are a gap */
    LO_NT
} lo_tkind_t;

typedef enum {
    LO_O_NONE, /* data movement: no op */
    LO_O_SUM,
    LO_O_PROD,
    LO_O_MAX,
    LO_O_MIN,
    LO_O_BXOR,
    LO_O_LAND,
    LO_O_MAXLOC,
    LO_O_MINLOC,
    LO_O_UCOMM,    /* user op, commutative: (1 + a)(1 + b) - 1 */
    LO_O_UNONCOMM, /* user op, non-commutative: 2x2 byte matrices, affine maps */
    LO_NO
} lo_okind_t;

LO_UNUSED static const char *lo_tname[LO_NT] = {"int", "int64", "float", "double", "dcomplex", "vector(int)", "2int",
                                                "double_int", "mat2x2(u32)", "pair(int32,int64)"};
LO_UNUSED static const char *lo_oname[LO_NO] = {"-", "SUM", "PROD", "MAX", "MIN", "BXOR", "LAND", "MAXLOC", "MINLOC",
                                                "user-commutative", "user-noncommutative"};

typedef struct { int v, i; } lo_2int_t;
typedef struct { double v; int i; } lo_dint_t;
typedef struct { int32_t a; int32_t pad; int64_t b; } lo_pair_t;

#define LO_VEC_INTS 6      /* the strided type's extent, in ints */
#define LO_ELEM_BYTES 128  /* room for one element's data, the strided type's shift included */
#define LO_BIT(t) (1u << (t))

/* ------------------------------------------------------------------------- */
/* what differs between the tests                                            */

typedef enum {
    LO_HASH_SPREAD, /* the key in the top bits and spread by a multiply (test_allreduce, test_colls) */
    LO_HASH_MIXED   /* the key hashed first (test_nonblocking) */
} lo_hash_t;

typedef struct {
    /* ints before the strided type's first data int: its true lower bound.  0 builds the
     * plain resized vector, more wraps it in an hindexed type displaced by that much. */
    int vec_shift;
    /* the hash of (rank, index, key); key = salt * salt_stride + tkey[t] * nokey + okey[o],
     * the test's own numbering of types and ops (-1: a kind it never generates) */
    lo_hash_t hash;
    int salt_stride;
    const signed char *tkey; /* [LO_NT] */
    const signed char *okey; /* [LO_NO] */
    int nokey;
    /* PROD inputs: the factors 2 and 3 where (r + i) % 8 is 0 and 4 (else where h % 16 is) */
    int prod_by_index;
    /* double MAX / MIN inputs: 53-bit integers / 4096 (else any int64 / 4096, rounded) */
    int dmax53;
    /* non-commutative strided inputs: odd multipliers, so compositions never collapse */
    int vec_odd;
    /* types each user op may be called with (bit t); any other counts in lo_userop_bad_calls */
    unsigned ucomm_types, unoncomm_types;
} lo_config_t;

/* ------------------------------------------------------------------------- */
/* state (lo_setup fills it)                                                 */

LO_UNUSED static lo_config_t lo_cfg;
LO_UNUSED static int lo_vec_data[4]; /* data ints of an element of the strided type */
LO_UNUSED static MPI_Datatype lo_dt[LO_NT];
LO_UNUSED static size_t lo_ext[LO_NT];
LO_UNUSED static MPI_Op lo_op[LO_NO];
LO_UNUSED static long lo_userop_bad_calls; /* a user op called with a datatype it may not see */
/* the data bytes of one element (lo_mark_data), computed once: checks run per element */
LO_UNUSED static char lo_mask[LO_NT][LO_ELEM_BYTES];
LO_UNUSED static size_t lo_span[LO_NT]; /* one past the last data byte */
LO_UNUSED static int lo_dense[LO_NT];   /* every byte below lo_span is data */

/* No gap inside the extent and nothing past it: only the data can change. */
LO_UNUSED static inline int lo_gapless(lo_tkind_t t) { return lo_dense[t] && lo_span[t] == lo_ext[t]; }

/* ------------------------------------------------------------------------- */
/* hashes                                                                    */

static inline uint64_t lo_mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
static inline uint64_t lo_hash_spread(int r, long i, uint64_t key)
{
    return lo_mix64(((uint64_t) (unsigned) r << 40) ^ ((uint64_t) i << 3) ^ (key << 58) ^ (key * 0x51ED27ull));
}
static inline uint64_t lo_hash_mixed(int r, long i, uint64_t key)
{
    return lo_mix64(((uint64_t) (unsigned) r << 40) ^ ((uint64_t) i << 2) ^ lo_mix64(key));
}

static inline uint64_t lo_hash(lo_tkind_t t, lo_okind_t o, int r, long i, uint64_t salt)
{
    int tk = lo_cfg.tkey ? lo_cfg.tkey[t] : (int) t, ok = lo_cfg.okey ? lo_cfg.okey[o] : (int) o;
    int no = lo_cfg.tkey ? lo_cfg.nokey : LO_NO;
    /* a kind the test does not number: keys above any it does */
    uint64_t k = tk < 0 || ok < 0 ? 1024u + (uint64_t) (t * LO_NO + o) : (uint64_t) (tk * no + ok);
    uint64_t key = salt * (uint64_t) lo_cfg.salt_stride + k;
    return lo_cfg.hash == LO_HASH_MIXED ? lo_hash_mixed(r, i, key) : lo_hash_spread(r, i, key);
}

/* A 2x2 matrix of bytes in a uint32, [[odd, even], [even, odd]]: products stay
 * invertible mod 2 (they never collapse to 0) and do not commute. */
static inline uint32_t lo_gen_mat8(uint64_t h)
{
    uint32_t p = (uint32_t) (h & 0xff) | 1u, q = (uint32_t) ((h >> 8) & 0xfe);
    uint32_t r = (uint32_t) ((h >> 16) & 0xfe), s = (uint32_t) ((h >> 24) & 0xff) | 1u;
    return p | q << 8 | r << 16 | s << 24;
}
static inline uint32_t lo_mul_mat8(uint32_t x, uint32_t y)
{
    uint32_t a0 = x & 0xff, a1 = (x >> 8) & 0xff, a2 = (x >> 16) & 0xff, a3 = x >> 24;
    uint32_t b0 = y & 0xff, b1 = (y >> 8) & 0xff, b2 = (y >> 16) & 0xff, b3 = y >> 24;
    uint32_t c0 = (a0 * b0 + a1 * b2) & 0xff, c1 = (a0 * b1 + a1 * b3) & 0xff;
    uint32_t c2 = (a2 * b0 + a3 * b2) & 0xff, c3 = (a2 * b1 + a3 * b3) & 0xff;
    return c0 | c1 << 8 | c2 << 16 | c3 << 24;
}

/* ------------------------------------------------------------------------- */
/* values                                                                    */

/* A factor of an exact product: 2 (the caller's large power of two), 3, or +-1. */
static inline int lo_prod_factor(int r, long i, uint64_t h)
{
    if (lo_cfg.prod_by_index) {
        long m = (r + i) % 8;
        return m == 0 ? 2 : m == 4 ? 3 : (h & 1) ? -1 : 1;
    }
    return h % 16 == 0 ? 2 : h % 16 == 1 ? 3 : ((h >> 8) & 1) ? -1 : 1;
}

/* Writes the data bytes of element i of rank r's input (salt: a call, a start). */
LO_UNUSED static void lo_gen(lo_tkind_t t, lo_okind_t o, int r, long i, uint64_t salt, void *e)
{
    uint64_t h = lo_hash(t, o, r, i, salt);
    switch (t) {
    case LO_T_INT: {
        int32_t v;
        switch (o) {
        case LO_O_SUM: v = (int32_t) (h % 2001) - 1000; break;
        case LO_O_PROD: v = lo_prod_factor(r, i, h); break;
        case LO_O_LAND: v = (h % 61 == 0) ? 0 : (int32_t) (h % 5) - 7; break;
        case LO_O_UNONCOMM: v = (int32_t) lo_gen_mat8(h); break;
        default: v = (int32_t) (uint32_t) h; break;
        }
        memcpy(e, &v, sizeof(v));
        break;
    }
    case LO_T_INT64: {
        int64_t v;
        switch (o) {
        case LO_O_SUM: v = ((int64_t) (h % 2001) - 1000) * ((int64_t) 1 << 38) + (int64_t) ((h >> 20) % 1000); break;
        case LO_O_PROD: {
            int f = lo_prod_factor(r, i, h);
            v = f == 2 ? (int64_t) 1 << 13 : f;
            break;
        }
        case LO_O_LAND: v = (h % 61 == 0) ? 0 : (int64_t) (h % 5) + ((int64_t) 1 << 40); break;
        default: v = (int64_t) h; break;
        }
        memcpy(e, &v, sizeof(v));
        break;
    }
    case LO_T_FLOAT: {
        static const float pf[6] = {1.0f, -1.0f, 2.0f, 0.5f, -2.0f, 0.25f};
        uint32_t bits = (uint32_t) h;
        float v;
        if (o == LO_O_SUM) v = (float) ((int) (h % 201) - 100) + 0.25f * (float) ((h >> 8) & 3);
        else if (o == LO_O_PROD) v = pf[h % 6];
        else if (o == LO_O_NONE) memcpy(&v, &bits, 4); /* moved data: any bit pattern, NaNs included */
        else v = (float) ((int) (h % 200001) - 100000) / 64.0f;
        memcpy(e, &v, sizeof(v));
        break;
    }
    case LO_T_DOUBLE: {
        double v;
        /* multiples of 1/1024 below 1000: any sum of up to 2^20 of them is exact */
        if (o == LO_O_SUM) v = (double) ((long) (h % 2000001) - 1000000) / 1024.0;
        else if (o == LO_O_PROD) v = ldexp(((h >> 8) & 1) ? -1.0 : 1.0, (int) (h % 7) - 3);
        else if (o == LO_O_NONE) memcpy(&v, &h, 8);
        else if (lo_cfg.dmax53) v = (double) ((int64_t) h >> 11) / 4096.0;
        else v = (double) (int64_t) h / 4096.0;
        memcpy(e, &v, sizeof(v));
        break;
    }
    case LO_T_DCOMPLEX: { /* a C double _Complex, stored as its two doubles (C11 6.2.5p13) */
        double re, im;
        if (o == LO_O_SUM) {
            re = (double) ((int) (h % 201) - 100);
            im = (double) ((int) ((h >> 16) % 201) - 100);
        } else if ((r + i) % 8 == 0) { /* 1+i */
            re = 1.0;
            im = 1.0;
        } else {
            static const double u[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
            re = u[h % 4][0];
            im = u[h % 4][1];
        }
        ((double *) e)[0] = re;
        ((double *) e)[1] = im;
        break;
    }
    case LO_T_VEC: {
        int32_t *p = e;
        for (int k = 0; k < 4; k++) p[lo_vec_data[k]] = (int32_t) (uint32_t) lo_mix64(h + (uint64_t) k);
        /* affine maps x -> a x + b */
        if (lo_cfg.vec_odd && o == LO_O_UNONCOMM) p[lo_vec_data[0]] |= 1, p[lo_vec_data[2]] |= 1;
        break;
    }
    case LO_T_2INT: {
        lo_2int_t *p = e;
        p->v = (int) (h % 7) - 3;                          /* many ties */
        p->i = (int) ((r * 37 + 11 + (i % 3)) % 101) - 50; /* not monotonic in r */
        break;
    }
    case LO_T_DOUBLE_INT: {
        lo_dint_t *p = e;
        p->v = (double) (h % 9) / 4.0 - 1.0;
        p->i = (int) ((r * 53 + 7 + (i % 5)) % 97) - 40;
        break;
    }
    case LO_T_MAT: {
        uint32_t *p = e;
        for (int k = 0; k < 4; k++) p[k] = (uint32_t) lo_mix64(h + (uint64_t) k);
        break;
    }
    case LO_T_PAIR: {
        lo_pair_t *p = e;
        p->a = (o == LO_O_UNONCOMM) ? (int32_t) lo_gen_mat8(h) : (int32_t) (uint32_t) h;
        p->b = (int64_t) lo_mix64(h + 1);
        break;
    }
    default: break;
    }
}

/* ------------------------------------------------------------------------- */
/* the op on two elements                                                    */

/* out := L o R (L holds the lower ranks).  out may alias L or R. */
LO_UNUSED static void lo_apply(lo_tkind_t t, lo_okind_t o, const void *L, const void *R, void *out)
{
    switch (t) {
    case LO_T_INT: {
        int32_t a, b;
        uint32_t c = 0;
        memcpy(&a, L, 4);
        memcpy(&b, R, 4);
        switch (o) {
        case LO_O_SUM: c = (uint32_t) a + (uint32_t) b; break;
        case LO_O_PROD: c = (uint32_t) a * (uint32_t) b; break;
        case LO_O_MAX: c = (uint32_t) (a > b ? a : b); break;
        case LO_O_MIN: c = (uint32_t) (a < b ? a : b); break;
        case LO_O_BXOR: c = (uint32_t) (a ^ b); break;
        case LO_O_LAND: c = a && b; break;
        case LO_O_UCOMM: c = (1u + (uint32_t) a) * (1u + (uint32_t) b) - 1u; break;
        case LO_O_UNONCOMM: c = lo_mul_mat8((uint32_t) a, (uint32_t) b); break;
        default: break;
        }
        memcpy(out, &c, 4);
        break;
    }
    case LO_T_INT64: {
        int64_t a, b;
        uint64_t c = 0;
        memcpy(&a, L, 8);
        memcpy(&b, R, 8);
        switch (o) {
        case LO_O_SUM: c = (uint64_t) a + (uint64_t) b; break;
        case LO_O_PROD: c = (uint64_t) a * (uint64_t) b; break;
        case LO_O_MAX: c = (uint64_t) (a > b ? a : b); break;
        case LO_O_MIN: c = (uint64_t) (a < b ? a : b); break;
        case LO_O_BXOR: c = (uint64_t) (a ^ b); break;
        case LO_O_LAND: c = a && b; break;
        default: break;
        }
        memcpy(out, &c, 8);
        break;
    }
    case LO_T_FLOAT: {
        float a, b, c = 0;
        memcpy(&a, L, 4);
        memcpy(&b, R, 4);
        switch (o) {
        case LO_O_SUM: c = a + b; break;
        case LO_O_PROD: c = a * b; break;
        case LO_O_MAX: c = a > b ? a : b; break;
        case LO_O_MIN: c = a < b ? a : b; break;
        default: break;
        }
        memcpy(out, &c, 4);
        break;
    }
    case LO_T_DOUBLE: {
        double a, b, c = 0;
        memcpy(&a, L, 8);
        memcpy(&b, R, 8);
        switch (o) {
        case LO_O_SUM: c = a + b; break;
        case LO_O_PROD: c = a * b; break;
        case LO_O_MAX: c = a > b ? a : b; break;
        case LO_O_MIN: c = a < b ? a : b; break;
        default: break;
        }
        memcpy(out, &c, 8);
        break;
    }
    case LO_T_DCOMPLEX: {
        const double *a = L, *b = R;
        double re, im;
        if (o == LO_O_SUM) {
            re = a[0] + b[0];
            im = a[1] + b[1];
        } else {
            re = a[0] * b[0] - a[1] * b[1];
            im = a[0] * b[1] + a[1] * b[0];
        }
        ((double *) out)[0] = re;
        ((double *) out)[1] = im;
        break;
    }
    case LO_T_VEC: {
        const int32_t *a = L, *b = R;
        uint32_t c[4];
        if (o == LO_O_UCOMM) {
            for (int k = 0; k < 4; k++)
                c[k] = (1u + (uint32_t) a[lo_vec_data[k]]) * (1u + (uint32_t) b[lo_vec_data[k]]) - 1u;
        } else { /* two affine maps x -> a x + b per element; L o R = L(R(x)) */
            for (int p = 0; p < 2; p++) {
                uint32_t a1 = (uint32_t) a[lo_vec_data[2 * p]], b1 = (uint32_t) a[lo_vec_data[2 * p + 1]];
                uint32_t a2 = (uint32_t) b[lo_vec_data[2 * p]], b2 = (uint32_t) b[lo_vec_data[2 * p + 1]];
                c[2 * p] = a1 * a2;
                c[2 * p + 1] = a1 * b2 + b1;
            }
        }
        for (int k = 0; k < 4; k++) ((int32_t *) out)[lo_vec_data[k]] = (int32_t) c[k];
        break;
    }
    case LO_T_2INT: {
        lo_2int_t a = *(const lo_2int_t *) L, b = *(const lo_2int_t *) R, c;
        if (o == LO_O_MAXLOC) c = (a.v > b.v) ? a : (b.v > a.v) ? b : (lo_2int_t){a.v, a.i < b.i ? a.i : b.i};
        else c = (a.v < b.v) ? a : (b.v < a.v) ? b : (lo_2int_t){a.v, a.i < b.i ? a.i : b.i};
        *(lo_2int_t *) out = c;
        break;
    }
    case LO_T_DOUBLE_INT: {
        lo_dint_t a = *(const lo_dint_t *) L, b = *(const lo_dint_t *) R, c;
        if (o == LO_O_MAXLOC) c = (a.v > b.v) ? a : (b.v > a.v) ? b : (lo_dint_t){a.v, a.i < b.i ? a.i : b.i};
        else c = (a.v < b.v) ? a : (b.v < a.v) ? b : (lo_dint_t){a.v, a.i < b.i ? a.i : b.i};
        ((lo_dint_t *) out)->v = c.v; /* not the padding: MPI need not write it */
        ((lo_dint_t *) out)->i = c.i;
        break;
    }
    case LO_T_MAT: {
        const uint32_t *a = L, *b = R;
        uint32_t c[4];
        c[0] = a[0] * b[0] + a[1] * b[2];
        c[1] = a[0] * b[1] + a[1] * b[3];
        c[2] = a[2] * b[0] + a[3] * b[2];
        c[3] = a[2] * b[1] + a[3] * b[3];
        memcpy(out, c, sizeof(c));
        break;
    }
    case LO_T_PAIR: {
        const lo_pair_t *a = L, *b = R;
        uint32_t ca = (o == LO_O_UCOMM) ? (1u + (uint32_t) a->a) * (1u + (uint32_t) b->a) - 1u
                                        : lo_mul_mat8((uint32_t) a->a, (uint32_t) b->a);
        uint64_t cb = (uint64_t) a->b + (uint64_t) b->b;
        ((lo_pair_t *) out)->a = (int32_t) ca;
        ((lo_pair_t *) out)->b = (int64_t) cb;
        break;
    }
    default: break;
    }
}

/* ------------------------------------------------------------------------- */
/* data bytes and comparison                                                 */

/* Marks the bytes of one element that MPI may write (relative to its start). */
LO_UNUSED static void lo_mark_data(lo_tkind_t t, char *m)
{
    switch (t) {
    case LO_T_INT: case LO_T_FLOAT: memset(m, 1, 4); break;
    case LO_T_INT64: case LO_T_DOUBLE: case LO_T_2INT: memset(m, 1, 8); break;
    case LO_T_DCOMPLEX: case LO_T_MAT: memset(m, 1, 16); break;
    case LO_T_DOUBLE_INT: memset(m, 1, 16); break; /* the padding after the int too: not checked */
    case LO_T_VEC:
        for (int k = 0; k < 4; k++) memset(m + lo_vec_data[k] * sizeof(int32_t), 1, sizeof(int32_t));
        break;
    case LO_T_PAIR:
        memset(m + offsetof(lo_pair_t, a), 1, 4);
        memset(m + offsetof(lo_pair_t, b), 1, 8);
        break;
    default: break;
    }
}

/* Do two elements agree?  Moved data (o == LO_O_NONE) and integers: bytewise.  Floating
 * point reductions: by value (no NaN is produced; the sign of a zero may depend on the
 * grouping, of a complex product too).  double_int: its double bytewise, its int, not the
 * padding. */
LO_UNUSED static int lo_same(lo_tkind_t t, lo_okind_t o, const void *x, const void *y)
{
    if (o != LO_O_NONE) {
        if (t == LO_T_FLOAT) return *(const float *) x == *(const float *) y;
        if (t == LO_T_DOUBLE) return *(const double *) x == *(const double *) y;
        if (t == LO_T_DCOMPLEX)
            return ((const double *) x)[0] == ((const double *) y)[0] &&
                   ((const double *) x)[1] == ((const double *) y)[1];
    }
    if (t == LO_T_DOUBLE_INT)
        return 0 == memcmp(&((const lo_dint_t *) x)->v, &((const lo_dint_t *) y)->v, 8) &&
               ((const lo_dint_t *) x)->i == ((const lo_dint_t *) y)->i;
    if (lo_dense[t]) return 0 == memcmp(x, y, lo_span[t]);
    for (size_t b = 0; b < lo_span[t]; b++)
        if (lo_mask[t][b] && ((const char *) x)[b] != ((const char *) y)[b]) return 0;
    return 1;
}

LO_UNUSED static void lo_show(lo_tkind_t t, const void *x, char *buf, size_t len)
{
    switch (t) {
    case LO_T_INT: snprintf(buf, len, "%d (0x%08x)", *(const int32_t *) x, (unsigned) *(const uint32_t *) x); break;
    case LO_T_INT64: snprintf(buf, len, "%lld", (long long) *(const int64_t *) x); break;
    case LO_T_FLOAT:
        snprintf(buf, len, "%.9g (0x%08x)", (double) *(const float *) x, (unsigned) *(const uint32_t *) x);
        break;
    case LO_T_DOUBLE:
        snprintf(buf, len, "%.17g (0x%016llx)", *(const double *) x, (unsigned long long) *(const uint64_t *) x);
        break;
    case LO_T_DCOMPLEX: snprintf(buf, len, "(%.17g,%.17g)", ((const double *) x)[0], ((const double *) x)[1]); break;
    case LO_T_VEC: {
        const int32_t *p = x;
        snprintf(buf, len, "[%d %d _ %d %d]", p[lo_vec_data[0]], p[lo_vec_data[1]], p[lo_vec_data[2]],
                 p[lo_vec_data[3]]);
        break;
    }
    case LO_T_2INT: snprintf(buf, len, "(%d,%d)", ((const lo_2int_t *) x)->v, ((const lo_2int_t *) x)->i); break;
    case LO_T_DOUBLE_INT: snprintf(buf, len, "(%g,%d)", ((const lo_dint_t *) x)->v, ((const lo_dint_t *) x)->i); break;
    case LO_T_MAT: {
        const uint32_t *p = x;
        snprintf(buf, len, "[%u %u; %u %u]", p[0], p[1], p[2], p[3]);
        break;
    }
    case LO_T_PAIR:
        snprintf(buf, len, "(%d, %lld)", ((const lo_pair_t *) x)->a, (long long) ((const lo_pair_t *) x)->b);
        break;
    default: snprintf(buf, len, "?"); break;
    }
}

/* ------------------------------------------------------------------------- */
/* user ops, setup                                                           */

/* inoutvec[k] := invec[k] o inoutvec[k] (invec holds the lower ranks) */
static void lo_userop_run(lo_okind_t o, void *in, void *inout, int *len, MPI_Datatype *dt)
{
    unsigned allowed = o == LO_O_UCOMM ? lo_cfg.ucomm_types : lo_cfg.unoncomm_types;
    int t = LO_NT;
    for (int k = 0; k < LO_NT && t == LO_NT; k++)
        if ((allowed & LO_BIT(k)) && *dt == lo_dt[k]) t = k;
    if (t == LO_NT) {
        lo_userop_bad_calls++;
        return;
    }
    for (int k = 0; k < *len; k++) {
        char *a = (char *) in + (size_t) k * lo_ext[t];
        char *b = (char *) inout + (size_t) k * lo_ext[t];
        lo_apply((lo_tkind_t) t, o, a, b, b);
    }
}
static void lo_userop_comm_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    lo_userop_run(LO_O_UCOMM, in, inout, len, dt);
}
static void lo_userop_noncomm_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    lo_userop_run(LO_O_UNONCOMM, in, inout, len, dt);
}

static void lo_abort(const char *what)
{
    fprintf(stderr, "loom_test_oracle: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* Creates the datatypes and ops (after MPI_Init).  cfg is copied. */
LO_UNUSED static void lo_setup(const lo_config_t *cfg)
{
    MPI_Datatype v, shifted, pair;
    MPI_Aint lb, e, tlb, te;
    const int one = 1, blens[2] = {1, 1};
    const MPI_Aint vdisp = cfg->vec_shift * (MPI_Aint) sizeof(int32_t);
    const MPI_Aint pdisp[2] = {offsetof(lo_pair_t, a), offsetof(lo_pair_t, b)};
    const MPI_Datatype ptypes[2] = {MPI_INT32_T, MPI_INT64_T};

    lo_cfg = *cfg;
    if (lo_cfg.salt_stride <= 0) lo_cfg.salt_stride = 1;
    if (sizeof(int) != 4 || cfg->vec_shift < 0 || (size_t) (cfg->vec_shift + 5) * sizeof(int32_t) > LO_ELEM_BYTES)
        lo_abort("unsupported int size or strided type shift");
    for (int k = 0; k < 4; k++) lo_vec_data[k] = cfg->vec_shift + (k < 2 ? k : k + 1);

    lo_dt[LO_T_INT] = MPI_INT;
    lo_dt[LO_T_INT64] = MPI_INT64_T;
    lo_dt[LO_T_FLOAT] = MPI_FLOAT;
    lo_dt[LO_T_DOUBLE] = MPI_DOUBLE;
    lo_dt[LO_T_DCOMPLEX] = MPI_C_DOUBLE_COMPLEX;
    lo_dt[LO_T_2INT] = MPI_2INT;
    lo_dt[LO_T_DOUBLE_INT] = MPI_DOUBLE_INT;
    /* the strided type: a true lower bound above 0 catches scratch buffers not shifted by it */
    MPI_Type_vector(2, 2, 3, MPI_INT, &v);
    if (cfg->vec_shift > 0) {
        MPI_Type_create_hindexed(1, &one, &vdisp, v, &shifted);
        MPI_Type_create_resized(shifted, 0, LO_VEC_INTS * sizeof(int32_t), &lo_dt[LO_T_VEC]);
        MPI_Type_free(&shifted);
    } else {
        MPI_Type_create_resized(v, 0, LO_VEC_INTS * sizeof(int32_t), &lo_dt[LO_T_VEC]);
    }
    MPI_Type_free(&v);
    MPI_Type_commit(&lo_dt[LO_T_VEC]);
    MPI_Type_contiguous(4, MPI_UINT32_T, &lo_dt[LO_T_MAT]);
    MPI_Type_commit(&lo_dt[LO_T_MAT]);
    MPI_Type_create_struct(2, blens, pdisp, ptypes, &pair);
    MPI_Type_create_resized(pair, 0, sizeof(lo_pair_t), &lo_dt[LO_T_PAIR]);
    MPI_Type_commit(&lo_dt[LO_T_PAIR]);
    MPI_Type_free(&pair);
    for (int t = 0; t < LO_NT; t++) {
        MPI_Type_get_extent(lo_dt[t], &lb, &e);
        lo_ext[t] = (size_t) e;
    }
    MPI_Type_get_true_extent(lo_dt[LO_T_VEC], &tlb, &te);
    if (tlb != vdisp || te != 5 * (MPI_Aint) sizeof(int32_t) || lo_ext[LO_T_VEC] != 24 || lo_ext[LO_T_PAIR] != 16 ||
        lo_ext[LO_T_DOUBLE_INT] != sizeof(lo_dint_t) || lo_ext[LO_T_2INT] != sizeof(lo_2int_t) ||
        lo_ext[LO_T_DCOMPLEX] != 16 || lo_ext[LO_T_MAT] != 16)
        lo_abort("unexpected datatype layout");

    for (int t = 0; t < LO_NT; t++) {
        memset(lo_mask[t], 0, LO_ELEM_BYTES);
        lo_mark_data((lo_tkind_t) t, lo_mask[t]);
        lo_span[t] = 0;
        for (size_t b = 0; b < LO_ELEM_BYTES; b++)
            if (lo_mask[t][b]) lo_span[t] = b + 1;
        lo_dense[t] = 1;
        for (size_t b = 0; b < lo_span[t]; b++) lo_dense[t] &= lo_mask[t][b] != 0;
    }

    lo_op[LO_O_NONE] = MPI_OP_NULL;
    lo_op[LO_O_SUM] = MPI_SUM;
    lo_op[LO_O_PROD] = MPI_PROD;
    lo_op[LO_O_MAX] = MPI_MAX;
    lo_op[LO_O_MIN] = MPI_MIN;
    lo_op[LO_O_BXOR] = MPI_BXOR;
    lo_op[LO_O_LAND] = MPI_LAND;
    lo_op[LO_O_MAXLOC] = MPI_MAXLOC;
    lo_op[LO_O_MINLOC] = MPI_MINLOC;
    MPI_Op_create(lo_userop_comm_fn, 1, &lo_op[LO_O_UCOMM]);
    MPI_Op_create(lo_userop_noncomm_fn, 0, &lo_op[LO_O_UNONCOMM]);
}

/* Frees what lo_setup created (before MPI_Finalize). */
LO_UNUSED static void lo_free(void)
{
    MPI_Type_free(&lo_dt[LO_T_VEC]);
    MPI_Type_free(&lo_dt[LO_T_MAT]);
    MPI_Type_free(&lo_dt[LO_T_PAIR]);
    MPI_Op_free(&lo_op[LO_O_UCOMM]);
    MPI_Op_free(&lo_op[LO_O_UNONCOMM]);
}

#endif /* LOOM_TEST_ORACLE_H */

/*
 * loom: the torus in text (loom_torus.h): shapes, routing orders, map files
 * (coll_loom_torus_file) and a node's coordinates from its environment.
 */
#include "opal/loom/loom_torus.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char loom_dim_letters[MCA_COLL_LOOM_TORUS_MAX_DIMS + 1] = "xyzuvw";

int mca_coll_loom_torus_parse_dims(mca_coll_loom_torus_t *t, const char *text, char *err, size_t errlen)
{
    const char *p = text;

    memset(t, 0, sizeof(*t));
    if (NULL == text) {
        snprintf(err, errlen, "no dimensions");
        return -1;
    }
    for (;;) {
        while (' ' == *p || '\t' == *p || ',' == *p || 'x' == *p || 'X' == *p) {
            ++p;
        }
        if ('\0' == *p || '\n' == *p || '#' == *p) {
            break;
        }
        if (!isdigit((unsigned char) *p)) {
            snprintf(err, errlen, "'%s': a dimension must be a number of at least 1", p);
            return -1;
        }
        char *end;
        const long v = strtol(p, &end, 10);
        if (v < 1 || v > INT_MAX / 2) {
            snprintf(err, errlen, "dimension %ld: must be from 1 to %d", v, INT_MAX / 2);
            return -1;
        }
        if (t->ndims == MCA_COLL_LOOM_TORUS_MAX_DIMS) {
            snprintf(err, errlen, "more than %d dimensions", MCA_COLL_LOOM_TORUS_MAX_DIMS);
            return -1;
        }
        t->dims[t->ndims] = (int) v;
        p = end;
        if (0 == strncmp(p, ":mesh", 5)) {
            t->mesh[t->ndims] = true;
            p += 5;
        } else if (':' == *p) {
            snprintf(err, errlen, "'%s': the only option of a dimension is ':mesh'", p);
            return -1;
        }
        t->order[t->ndims] = t->ndims;
        ++t->ndims;
        if (!('\0' == *p || '\n' == *p || '#' == *p || ' ' == *p || '\t' == *p || ',' == *p || 'x' == *p ||
              'X' == *p)) {
            snprintf(err, errlen, "'%s': expected a separator (x , or blank) after a dimension", p);
            return -1;
        }
    }
    if (0 == t->ndims) {
        snprintf(err, errlen, "no dimensions");
        return -1;
    }
    if (0 == mca_coll_loom_torus_nodes(t)) {
        snprintf(err, errlen, "too many nodes");
        return -1;
    }
    return 0;
}

int mca_coll_loom_torus_parse_order(mca_coll_loom_torus_t *t, const char *text, char *err, size_t errlen)
{
    int order[MCA_COLL_LOOM_TORUS_MAX_DIMS], n = 0;
    bool seen[MCA_COLL_LOOM_TORUS_MAX_DIMS] = {false};

    for (const char *p = text; NULL != p && '\0' != *p; ++p) {
        int d;
        if (' ' == *p || ',' == *p || '\t' == *p) {
            continue;
        }
        const char *l = strchr(loom_dim_letters, tolower((unsigned char) *p));
        if (isdigit((unsigned char) *p)) {
            d = *p - '0';
        } else if (NULL != l && '\0' != *p) {
            d = (int) (l - loom_dim_letters);
        } else {
            snprintf(err, errlen, "'%c': name dimensions x y z u v w or 0-5", *p);
            return -1;
        }
        if (d >= t->ndims || seen[d] || n == t->ndims) {
            snprintf(err, errlen, "'%s': not a permutation of the %d dimensions", text, t->ndims);
            return -1;
        }
        seen[d] = true;
        order[n++] = d;
    }
    if (n != t->ndims) {
        snprintf(err, errlen, "'%s': not a permutation of the %d dimensions", NULL != text ? text : "", t->ndims);
        return -1;
    }
    memcpy(t->order, order, sizeof(order[0]) * (size_t) n);
    return 0;
}

static char *trim(char *p)
{
    char *e;

    while (isspace((unsigned char) *p)) {
        ++p;
    }
    e = p + strlen(p);
    while (e > p && isspace((unsigned char) e[-1])) {
        *--e = '\0';
    }
    return p;
}

void mca_coll_loom_torus_free_hosts(mca_coll_loom_torus_host_t *hosts, int nhosts)
{
    for (int i = 0; NULL != hosts && i < nhosts; ++i) {
        free(hosts[i].host);
    }
    free(hosts);
}

/* A map file being read: where (for the messages), and what it holds so far. */
typedef struct {
    const char *path;
    int lineno;
    char *err;
    size_t errlen;
    mca_coll_loom_torus_t *t;
    mca_coll_loom_torus_host_t *h;
    int n, cap;
    char *taken; /* per torus node: named already */
} map_reader_t;

/* The line "dims <shape>" that must come first. */
static int map_dims(map_reader_t *r, const char *p)
{
    char why[256];

    if (0 != strncmp(p, "dims", 4) || !(isspace((unsigned char) p[4]))) {
        snprintf(r->err, r->errlen, "%s:%d: expected \"dims <shape>\" first, e.g. \"dims 4 4 2\"", r->path,
                 r->lineno);
        return -1;
    }
    if (0 != mca_coll_loom_torus_parse_dims(r->t, p + 4, why, sizeof(why))) {
        snprintf(r->err, r->errlen, "%s:%d: %s", r->path, r->lineno, why);
        return -1;
    }
    r->taken = calloc((size_t) mca_coll_loom_torus_nodes(r->t), 1);
    if (NULL == r->taken) {
        snprintf(r->err, r->errlen, "%s:%d: out of memory", r->path, r->lineno);
        return -1;
    }
    return 0;
}

/* The coordinates after host `host` on its line, from q on, into c[0..ndims-1]. */
static int map_coords(map_reader_t *r, const char *host, char *q, int *c)
{
    const mca_coll_loom_torus_t *t = r->t;
    int k = 0;

    for (;;) {
        char *end;
        while (isspace((unsigned char) *q)) {
            ++q;
        }
        if ('\0' == *q) {
            break;
        }
        const long v = strtol(q, &end, 10);
        if (end == q || !('\0' == *end || isspace((unsigned char) *end))) {
            snprintf(r->err, r->errlen, "%s:%d: host %s: '%s' is not a coordinate", r->path, r->lineno, host, q);
            return -1;
        }
        if (k == t->ndims) {
            snprintf(r->err, r->errlen, "%s:%d: host %s: more than %d coordinates", r->path, r->lineno, host,
                     t->ndims);
            return -1;
        }
        if (v < 0 || v >= t->dims[k]) {
            snprintf(r->err, r->errlen, "%s:%d: host %s: coordinate %d is %ld, outside 0..%d", r->path, r->lineno,
                     host, k, v, t->dims[k] - 1);
            return -1;
        }
        c[k++] = (int) v;
        q = end;
    }
    if (k != t->ndims) {
        snprintf(r->err, r->errlen, "%s:%d: host %s: %d coordinates, the torus has %d dimensions", r->path,
                 r->lineno, host, k, t->ndims);
        return -1;
    }
    return 0;
}

/* A line "<hostname> <c0> ...": the host appended, unless it is named twice or its
 * node is another host's. */
static int map_host(map_reader_t *r, char *p)
{
    char *host = p, *q = p;
    int c[MCA_COLL_LOOM_TORUS_MAX_DIMS] = {0};

    while ('\0' != *q && !isspace((unsigned char) *q)) {
        ++q;
    }
    if ('\0' != *q) {
        *q++ = '\0';
    }
    if (0 != map_coords(r, host, q, c)) {
        return -1;
    }
    for (int i = 0; i < r->n; ++i) {
        if (0 == strcmp(r->h[i].host, host)) {
            snprintf(r->err, r->errlen, "%s:%d: host %s named twice", r->path, r->lineno, host);
            return -1;
        }
    }
    const long idx = mca_coll_loom_torus_index(r->t, c);
    if (r->taken[idx]) {
        for (int i = 0; i < r->n; ++i) {
            if (mca_coll_loom_torus_index(r->t, r->h[i].c) == idx) {
                snprintf(r->err, r->errlen, "%s:%d: host %s on the coordinates of host %s", r->path, r->lineno,
                         host, r->h[i].host);
            }
        }
        return -1;
    }
    r->taken[idx] = 1;
    if (r->n == r->cap) {
        r->cap = r->cap > 0 ? 2 * r->cap : 64;
        mca_coll_loom_torus_host_t *nh = realloc(r->h, sizeof(*r->h) * (size_t) r->cap);
        if (NULL == nh) {
            snprintf(r->err, r->errlen, "%s:%d: out of memory", r->path, r->lineno);
            return -1;
        }
        r->h = nh;
    }
    r->h[r->n].host = strdup(host);
    if (NULL == r->h[r->n].host) {
        snprintf(r->err, r->errlen, "%s:%d: out of memory", r->path, r->lineno);
        return -1;
    }
    memcpy(r->h[r->n].c, c, sizeof(c));
    ++r->n;
    return 0;
}

int mca_coll_loom_torus_read_file(const char *path, mca_coll_loom_torus_t *t, mca_coll_loom_torus_host_t **hosts,
                                  int *nhosts, char *err, size_t errlen)
{
    FILE *f = NULL != path ? fopen(path, "r") : NULL;
    map_reader_t r = {.path = path, .err = err, .errlen = errlen, .t = t};
    char line[1024];
    int rc = -1;
    bool have_dims = false;

    *hosts = NULL;
    *nhosts = 0;
    if (NULL == f) {
        snprintf(err, errlen, "%s: cannot open it", NULL != path ? path : "(no file)");
        return -1;
    }
    while (NULL != fgets(line, sizeof(line), f)) {
        char *p, *hash = strchr(line, '#');
        ++r.lineno;
        if (NULL == strchr(line, '\n') && !feof(f)) {
            snprintf(err, errlen, "%s:%d: line longer than %zu characters", path, r.lineno, sizeof(line) - 2);
            goto out;
        }
        if (NULL != hash) {
            *hash = '\0';
        }
        p = trim(line);
        if ('\0' == *p) {
            continue;
        }
        if (0 != (have_dims ? map_host(&r, p) : map_dims(&r, p))) {
            goto out;
        }
        have_dims = true;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        goto out;
    }
    if (!have_dims) {
        snprintf(err, errlen, "%s: no \"dims <shape>\" line", path);
        goto out;
    }
    rc = 0;

out:
    fclose(f);
    free(r.taken);
    if (0 == rc) {
        *hosts = r.h;
        *nhosts = r.n;
    } else {
        mca_coll_loom_torus_free_hosts(r.h, r.n);
    }
    return rc;
}

int mca_coll_loom_torus_parse_coords(const char *text, int *c)
{
    const char *p = text;
    char sep = ',';
    int n = 0;

    if (NULL == text) {
        return -1;
    }
    if (0 == strncmp(p, "torus:", 6)) {
        p += 6;
        sep = ':';
    }
    for (;;) {
        char *end;
        const long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > INT_MAX / 2 || n == MCA_COLL_LOOM_TORUS_MAX_DIMS) {
            return -1;
        }
        c[n++] = (int) v;
        p = end;
        if (*p == sep) {
            ++p;
            continue;
        }
        /* the end, or Slurm's ".<node>" */
        return '\0' == *p || ('.' == *p && ':' == sep) ? n : -1;
    }
}

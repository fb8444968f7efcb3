/* pld-trace: reads a trace that PLD_TRACE wrote (docs/trace-format.md) and
 * prints what it shows: the time per kernel, how busy each rank's cores
 * were, the chain of waits that decided the run's length, and whether
 * events were lost.  With -o it also draws the trace as an SVG swimlane,
 * one lane per thread.  The reader is strict: a file that is not JSON, or
 * an event the format does not allow, is one line on stderr and the
 * status 1; a usage mistake is one line and the status 2.  Memory is
 * linear in the trace, and time too apart from sorting. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USAGE                                                                  \
  "usage: pld-trace TRACE.json [-o OUT.svg] [--width PX] | pld-trace --diag "  \
  "FOLDER"

/* Half the trace's resolution (1 ns): times closer than this are equal. */
#define EPS_US 0.0005
/* How deep JSON values may nest before the reader refuses the file (the
 * reader recurses once per level). */
#define MAX_DEPTH 512
/* The SVG's width in pixels: the default and the accepted range. */
#define WIDTH_DEFAULT 1600
#define WIDTH_MIN 400
#define WIDTH_MAX 100000
/* The SVG's layout, in pixels. */
#define SVG_MARGIN 16
#define SVG_LABEL_W 180 /* the column of lane labels */
#define SVG_TOP 64      /* the first process's title row */
#define SVG_AXIS_Y 50   /* the time axis */
#define SVG_GROUP_H 20  /* a process's title row */
#define SVG_GROUP_GAP 8
#define SVG_LANE_H 18
#define SVG_LANE_GAP 3
#define SVG_LEGEND_W 190 /* one legend entry */
#define SVG_LEGEND_H 18
/* A link between events that leads nowhere. */
#define NONE SIZE_MAX

#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

/* Memory.  The tool has nothing to save when memory runs out: it says so
 * and stops. */

static _Noreturn void out_of_memory(void) {
  fputs("pld-trace: out of memory\n", stderr);
  exit(1);
}

static void *xrealloc(void *p, size_t size) {
  void *q = realloc(p, size ? size : 1);
  if (!q)
    out_of_memory();
  return q;
}

/* Returns array a, of *cap items of size bytes each, grown to hold item
 * n. */
static void *grow(void *a, size_t *cap, size_t n, size_t size) {
  size_t c = *cap ? *cap : 16;
  if (n < *cap)
    return a;
  while (c <= n) {
    if (c > SIZE_MAX / 2 / size)
      out_of_memory();
    c *= 2;
  }
  *cap = c;
  return xrealloc(a, c * size);
}

/* A growing byte string, always NUL-terminated once it holds anything. */
struct buf {
  char *p;
  size_t n, cap;
};

static void buf_reserve(struct buf *b, size_t extra) {
  size_t c = b->cap ? b->cap : 256;
  if (extra >= SIZE_MAX / 2 - b->n)
    out_of_memory();
  if (b->n + extra + 1 <= b->cap)
    return;
  while (c < b->n + extra + 1)
    c *= 2;
  b->p = xrealloc(b->p, c);
  b->cap = c;
}

static void buf_add(struct buf *b, const char *s, size_t len) {
  buf_reserve(b, len);
  memcpy(b->p + b->n, s, len);
  b->n += len;
  b->p[b->n] = '\0';
}

static void buf_printf(struct buf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void buf_printf(struct buf *b, const char *fmt, ...) {
  va_list ap;
  int len;
  va_start(ap, fmt);
  len = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (len < 0)
    return;
  buf_reserve(b, (size_t)len);
  va_start(ap, fmt);
  vsnprintf(b->p + b->n, (size_t)len + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)len;
}

/* Interned strings: each distinct string is kept once and named by a small
 * id, so that events repeat names (kernels, threads, windows) cheaply and
 * compare them as integers.  Id 0 is the empty string. */
struct names {
  struct buf text; /* the strings, each followed by its NUL */
  size_t *off;     /* id -> its offset in text; off[n] is text's end */
  size_t n, cap;
  uint32_t *slot; /* an open-addressing table of id + 1, 0 when free */
  size_t nslot;
};

/* FNV-1a: names hash to their table slot and kernels to their colour. */
static uint32_t hash_bytes(const char *s, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static const char *name_of(const struct names *nm, uint32_t id) {
  return nm->text.p + nm->off[id];
}

static size_t name_len(const struct names *nm, uint32_t id) {
  return nm->off[id + 1] - nm->off[id] - 1;
}

static void names_rehash(struct names *nm) {
  size_t nslot = nm->nslot ? nm->nslot * 2 : 1024;
  free(nm->slot);
  nm->slot = xrealloc(NULL, nslot * sizeof *nm->slot);
  memset(nm->slot, 0, nslot * sizeof *nm->slot);
  nm->nslot = nslot;
  for (size_t id = 0; id < nm->n; id++) {
    size_t h =
        hash_bytes(name_of(nm, (uint32_t)id), name_len(nm, (uint32_t)id)) &
        (nslot - 1);
    while (nm->slot[h])
      h = (h + 1) & (nslot - 1);
    nm->slot[h] = (uint32_t)id + 1;
  }
}

/* Returns the id of string s of len bytes, adding it when new.  s must not
 * point into nm itself. */
static uint32_t name_add(struct names *nm, const char *s, size_t len) {
  size_t h;
  if (2 * (nm->n + 1) > nm->nslot)
    names_rehash(nm);
  h = hash_bytes(s, len) & (nm->nslot - 1);
  while (nm->slot[h]) {
    uint32_t id = nm->slot[h] - 1;
    if (name_len(nm, id) == len && !memcmp(name_of(nm, id), s, len))
      return id;
    h = (h + 1) & (nm->nslot - 1);
  }
  if (nm->n >= UINT32_MAX - 1)
    out_of_memory();
  nm->off = grow(nm->off, &nm->cap, nm->n + 1, sizeof *nm->off);
  if (nm->n == 0)
    nm->off[0] = 0;
  buf_add(&nm->text, s, len);
  nm->text.n++; /* keeps the NUL */
  nm->off[nm->n + 1] = nm->text.n;
  nm->slot[h] = (uint32_t)nm->n + 1;
  return (uint32_t)nm->n++;
}

static uint32_t name_addz(struct names *nm, const char *s) {
  return name_add(nm, s, strlen(s));
}

/* The trace, as read. */

enum cat {
  CAT_OTHER,
  CAT_HOST,
  CAT_DISPATCH,
  CAT_LAUNCH,
  CAT_BLOCK,
  CAT_WAIT,
  CAT_RMA,
  CAT_COLL,
  CAT_NOTIFY,
  CAT_LOST,         /* an "events lost" instant */
  CAT_PROCESS_NAME, /* metadata: name is the process's */
  CAT_THREAD_NAME,  /* metadata: name is the thread's */
  CAT_META          /* other metadata */
};

struct event {
  double ts, dur;  /* microseconds; dur is 0 but for spans */
  size_t index;    /* in traceEvents */
  size_t args;     /* its args as text in trace.args, or NONE */
  size_t src;      /* "f", or a wait released by a flow: the flow's "s" */
  size_t block;    /* a wait: the block span around it, or NONE */
  unsigned line;   /* in the file */
  int pid, tid;    /* tid -1: an event of the whole process */
  uint32_t lane;   /* in trace.lanes, when tid >= 0 */
  uint32_t name;   /* metadata: the process's or thread's name */
  uint32_t kernel; /* a block: its kernel */
  uint32_t id;     /* "s" and "f": the flow's id, as text */
  uint32_t on;     /* a wait: what it waited on, "window 'sig' cell [4, 1]" */
  uint32_t cond;   /* a wait: its condition, ">= 1", or 0 */
  uint32_t outcome;
  char ph; /* 'X', 'i', 's', 'f' or 'M' */
  unsigned char cat;
  unsigned char critical; /* a wait: on the chain that print_chain found */
};

/* A lane's events in one of the sorted indexes of struct trace. */
struct range {
  size_t first, n;
};

enum { R_SPANS, R_WAITS, R_BLOCKS };

struct lane {
  int pid, tid;
  uint32_t name;
  struct range r[3]; /* in trace.spans, trace.waits, trace.blocks */
  double y;          /* in the SVG */
};

struct proc {
  int pid;
  uint32_t name;
  size_t lanes, nlanes; /* in trace.lanes */
  double y;             /* in the SVG */
};

struct trace {
  const char *path;
  struct event *ev;
  size_t nev, evcap;
  struct names names;
  struct buf args; /* the args of events, as text for tooltips */
  int want_args;
  int seen_events; /* has read "traceEvents" */
  double lost_other, lost_instants;
  /* Built once the events are read: */
  double t0, t1; /* the extent: the first ts, the last end */
  int timed;     /* has any event with a time */
  struct lane *lanes;
  size_t nlanes;
  struct proc *procs;
  size_t nprocs;
  size_t *spans, nspans;   /* spans by lane, ts, end descending */
  size_t *waits, nwaits;   /* wait spans by lane, end */
  size_t *blocks, nblocks; /* block spans by lane, ts */
};

static double ev_end(const struct event *e) { return e->ts + e->dur; }

/* The JSON reader: a recursive-descent parser into a small tree that holds
 * one event at a time (the tree is emptied before each), so that memory
 * grows with the events kept, not with the text. */

enum jtype { J_NULL, J_FALSE, J_TRUE, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

struct jnode {
  double num;
  size_t kid, next;   /* first child, next sibling; 0: none */
  size_t key, keylen; /* a member: its name in parser.chars */
  size_t str, len;    /* a string: in parser.chars; a number: its text */
  unsigned line;
  unsigned char type;
};

struct parser {
  const char *src;
  size_t len, pos;
  unsigned line;
  struct jnode *nodes; /* node 0 is unused: index 0 means none */
  size_t nnodes, capnodes;
  struct buf chars; /* the strings of the tree, unescaped */
  char err[512];
  unsigned errline;
};

static int fail(struct parser *p, unsigned line, const char *fmt, ...)
    PRINTF_LIKE(3, 4);
static int fail(struct parser *p, unsigned line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err, sizeof p->err, fmt, ap);
  va_end(ap);
  p->errline = line;
  return -1;
}

/* Describes what the reader found at its position, for "got ...". */
static const char *found(const struct parser *p) {
  static char d[32];
  unsigned char c;
  if (p->pos >= p->len)
    return "the end of the file";
  c = (unsigned char)p->src[p->pos];
  if (c > 0x20 && c < 0x7f)
    snprintf(d, sizeof d, "'%c'", c);
  else
    snprintf(d, sizeof d, "byte 0x%02x", c);
  return d;
}

static const char *type_name(unsigned char type) {
  static const char *const names[] = {
      "null", "false", "true", "a number", "a string", "an array", "an object"};
  return names[type];
}

static void skip_ws(struct parser *p) {
  while (p->pos < p->len) {
    char c = p->src[p->pos];
    if (c == '\n')
      p->line++;
    else if (c != ' ' && c != '\t' && c != '\r')
      return;
    p->pos++;
  }
}

static int peek(const struct parser *p) {
  return p->pos < p->len ? (unsigned char)p->src[p->pos] : -1;
}

static size_t node_new(struct parser *p, unsigned char type) {
  struct jnode *n;
  p->nodes = grow(p->nodes, &p->capnodes, p->nnodes, sizeof *p->nodes);
  n = &p->nodes[p->nnodes];
  memset(n, 0, sizeof *n);
  n->type = type;
  n->line = p->line;
  return p->nnodes++;
}

/* Empties the tree before the next event. */
static void scratch_reset(struct parser *p) {
  p->nnodes = 1;
  p->chars.n = 0;
}

static int hex_digit(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Reads the 4 hex digits of a \u escape (p->pos at the 'u'). */
static int read_u4(struct parser *p, unsigned *out) {
  unsigned v = 0;
  p->pos++;
  for (int i = 0; i < 4; i++) {
    int d = hex_digit(peek(p));
    if (d < 0)
      return fail(p, p->line, "expected 4 hex digits after '\\u', got %s",
                  found(p));
    v = v * 16 + (unsigned)d;
    p->pos++;
  }
  *out = v;
  return 0;
}

static void put_utf8(struct buf *b, unsigned cp) {
  char s[4];
  size_t n;
  if (cp < 0x80) {
    s[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    s[0] = (char)(0xc0 | (cp >> 6));
    s[1] = (char)(0x80 | (cp & 0x3f));
    n = 2;
  } else if (cp < 0x10000) {
    s[0] = (char)(0xe0 | (cp >> 12));
    s[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    s[2] = (char)(0x80 | (cp & 0x3f));
    n = 3;
  } else {
    s[0] = (char)(0xf0 | (cp >> 18));
    s[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    s[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    s[3] = (char)(0x80 | (cp & 0x3f));
    n = 4;
  }
  buf_add(b, s, n);
}

/* The length of the valid UTF-8 sequence at s (of at most avail bytes,
 * s[0] >= 0x80), or 0: no overlong forms, no surrogates, nothing beyond
 * U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t avail) {
  size_t n;
  unsigned cp;
  if (s[0] >= 0xc2 && s[0] <= 0xdf) {
    n = 2;
    cp = s[0] & 0x1fu;
  } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
    n = 3;
    cp = s[0] & 0x0fu;
  } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
    n = 4;
    cp = s[0] & 0x07u;
  } else {
    return 0;
  }
  if (avail < n)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
      (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

/* Reads a string (p->pos at its '"') into p->chars: *off and *len. */
static int parse_string(struct parser *p, size_t *off, size_t *len) {
  *off = p->chars.n;
  p->pos++;
  for (;;) {
    size_t run = p->pos;
    unsigned char c;
    while (run < p->len) {
      c = (unsigned char)p->src[run];
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
        break;
      run++;
    }
    buf_add(&p->chars, p->src + p->pos, run - p->pos);
    p->pos = run;
    if (p->pos >= p->len)
      return fail(p, p->line, "expected '\"' to end a string, got %s",
                  found(p));
    c = (unsigned char)p->src[p->pos];
    if (c == '"') {
      p->pos++;
      break;
    }
    if (c < 0x20)
      return fail(p, p->line,
                  "a string holds a control character (byte 0x%02x): JSON "
                  "needs it escaped",
                  c);
    if (c >= 0x80) {
      size_t n =
          utf8_len((const unsigned char *)p->src + p->pos, p->len - p->pos);
      if (!n)
        return fail(p, p->line, "a string holds invalid UTF-8 (byte 0x%02x)",
                    c);
      buf_add(&p->chars, p->src + p->pos, n);
      p->pos += n;
      continue;
    }
    /* An escape. */
    p->pos++;
    switch (peek(p)) {
    case '"':
      buf_add(&p->chars, "\"", 1);
      break;
    case '\\':
      buf_add(&p->chars, "\\", 1);
      break;
    case '/':
      buf_add(&p->chars, "/", 1);
      break;
    case 'b':
      buf_add(&p->chars, "\b", 1);
      break;
    case 'f':
      buf_add(&p->chars, "\f", 1);
      break;
    case 'n':
      buf_add(&p->chars, "\n", 1);
      break;
    case 'r':
      buf_add(&p->chars, "\r", 1);
      break;
    case 't':
      buf_add(&p->chars, "\t", 1);
      break;
    case 'u': {
      unsigned cp, lo;
      if (read_u4(p, &cp))
        return -1;
      if (cp >= 0xdc00 && cp <= 0xdfff)
        return fail(p, p->line,
                    "a string holds a low surrogate (\\u%04X) with no high "
                    "surrogate before it",
                    cp);
      if (cp >= 0xd800 && cp <= 0xdbff) {
        if (peek(p) != '\\' || p->pos + 1 >= p->len ||
            p->src[p->pos + 1] != 'u')
          return fail(p, p->line,
                      "expected a low surrogate (\\uDC00 to \\uDFFF) after "
                      "\\u%04X, got %s",
                      cp, found(p));
        p->pos++;
        if (read_u4(p, &lo))
          return -1;
        if (lo < 0xdc00 || lo > 0xdfff)
          return fail(p, p->line,
                      "expected a low surrogate (\\uDC00 to \\uDFFF) after "
                      "\\u%04X, got \\u%04X",
                      cp, lo);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      }
      put_utf8(&p->chars, cp);
      continue; /* read_u4 moved past the digits */
    }
    default:
      return fail(p, p->line, "invalid escape in a string: '\\' then %s",
                  found(p));
    }
    p->pos++;
  }
  *len = p->chars.n - *off;
  buf_add(&p->chars, "", 0); /* a NUL after it, for the tool's own use */
  p->chars.n++;
  return 0;
}

static int digits(struct parser *p, const char *where) {
  int c = peek(p);
  if (c < '0' || c > '9')
    return fail(p, p->line, "expected a digit %s, got %s", where, found(p));
  while ((c = peek(p)) >= '0' && c <= '9')
    p->pos++;
  return 0;
}

static int parse_number(struct parser *p, size_t n) {
  size_t start = p->pos;
  if (peek(p) == '-')
    p->pos++;
  if (peek(p) == '0')
    p->pos++;
  else if (digits(p, "in a number"))
    return -1;
  if (peek(p) == '.') {
    p->pos++;
    if (digits(p, "after the '.' of a number"))
      return -1;
  }
  if (peek(p) == 'e' || peek(p) == 'E') {
    p->pos++;
    if (peek(p) == '+' || peek(p) == '-')
      p->pos++;
    if (digits(p, "in the exponent of a number"))
      return -1;
  }
  /* The file ends in a NUL, and the text checked above is a number that
   * strtod reads the same way (the "C" locale is in force). */
  p->nodes[n].num = strtod(p->src + start, NULL);
  p->nodes[n].str = start;
  p->nodes[n].len = p->pos - start;
  return 0;
}

static int parse_value(struct parser *p, int depth, size_t *out);

/* Reads an array or an object (p->pos at its '[' or '{') into node n. */
static int parse_container(struct parser *p, int depth, size_t n) {
  int object = p->src[p->pos] == '{';
  char close = object ? '}' : ']';
  size_t last = 0;
  p->pos++;
  skip_ws(p);
  if (peek(p) == close) {
    p->pos++;
    return 0;
  }
  for (;;) {
    size_t key = 0, keylen = 0, v;
    if (object) {
      skip_ws(p);
      if (peek(p) != '"')
        return fail(p, p->line, "expected a member name (a string), got %s",
                    found(p));
      if (parse_string(p, &key, &keylen))
        return -1;
      skip_ws(p);
      if (peek(p) != ':')
        return fail(p, p->line, "expected ':' after a member name, got %s",
                    found(p));
      p->pos++;
    }
    if (parse_value(p, depth + 1, &v))
      return -1;
    p->nodes[v].key = key;
    p->nodes[v].keylen = keylen;
    if (last)
      p->nodes[last].next = v;
    else
      p->nodes[n].kid = v;
    last = v;
    skip_ws(p);
    if (peek(p) == ',') {
      p->pos++;
      continue;
    }
    if (peek(p) == close) {
      p->pos++;
      return 0;
    }
    return fail(p, p->line,
                object ? "expected ',' or '}' after an object member, got %s"
                       : "expected ',' or ']' after an array element, got %s",
                found(p));
  }
}

static int parse_literal(struct parser *p, const char *word) {
  size_t len = strlen(word);
  if (p->len - p->pos < len || memcmp(p->src + p->pos, word, len))
    return fail(p, p->line, "expected a value, got %s", found(p));
  p->pos += len;
  return 0;
}

/* Reads one value into a new node: *out. */
static int parse_value(struct parser *p, int depth, size_t *out) {
  size_t n;
  skip_ws(p);
  if (depth > MAX_DEPTH)
    return fail(p, p->line, "values nest deeper than %d levels", MAX_DEPTH);
  switch (peek(p)) {
  case '{':
    *out = n = node_new(p, J_OBJECT);
    return parse_container(p, depth, n);
  case '[':
    *out = n = node_new(p, J_ARRAY);
    return parse_container(p, depth, n);
  case '"': {
    size_t off, len;
    *out = n = node_new(p, J_STRING);
    if (parse_string(p, &off, &len))
      return -1;
    p->nodes[n].str = off;
    p->nodes[n].len = len;
    return 0;
  }
  case 't':
    *out = node_new(p, J_TRUE);
    return parse_literal(p, "true");
  case 'f':
    *out = node_new(p, J_FALSE);
    return parse_literal(p, "false");
  case 'n':
    *out = node_new(p, J_NULL);
    return parse_literal(p, "null");
  default:
    if (peek(p) == '-' || (peek(p) >= '0' && peek(p) <= '9')) {
      *out = n = node_new(p, J_NUMBER);
      return parse_number(p, n);
    }
    return fail(p, p->line, "expected a value, got %s", found(p));
  }
}

/* Reading the events out of the tree. */

/* The member key of object o: its node, or 0 when it has none. */
static size_t member(const struct parser *p, size_t o, const char *key) {
  size_t klen = strlen(key);
  for (size_t k = p->nodes[o].kid; k; k = p->nodes[k].next)
    if (p->nodes[k].keylen == klen &&
        !memcmp(p->chars.p + p->nodes[k].key, key, klen))
      return k;
  return 0;
}

static const char *str_of(const struct parser *p, size_t n) {
  return p->chars.p + p->nodes[n].str;
}

/* The text of number n as written, for messages and tooltips. */
static int num_len(const struct parser *p, size_t n) {
  return p->nodes[n].len > 40 ? 40 : (int)p->nodes[n].len;
}

/* Finds member key of object o of the given type (J_NUMBER, J_STRING or
 * J_OBJECT): *out is its node, 0 when absent; a member of another type is
 * an error, named after what ("traceEvents[12]"). */
static int member_typed(struct parser *p, size_t o, const char *key,
                        unsigned char type, const char *what, size_t *out) {
  size_t n = member(p, o, key);
  *out = n;
  if (!n || p->nodes[n].type == type)
    return 0;
  return fail(p, p->nodes[n].line, "%s: \"%s\": expected %s, got %s", what, key,
              type_name(type), type_name(p->nodes[n].type));
}

/* A number member the event needs: present and finite. */
static int need_number(struct parser *p, size_t o, const char *key,
                       const char *what, const char *ph, double *out) {
  size_t n;
  if (member_typed(p, o, key, J_NUMBER, what, &n))
    return -1;
  if (!n)
    return fail(p, p->nodes[o].line, "%s: a \"%s\" event without \"%s\"", what,
                ph, key);
  if (!isfinite(p->nodes[n].num))
    return fail(p, p->nodes[n].line,
                "%s: \"%s\": expected a finite number, got %.*s", what, key,
                num_len(p, n), p->src + p->nodes[n].str);
  *out = p->nodes[n].num;
  return 0;
}

/* pid and tid: integers in [0, INT_MAX]. */
static int need_id(struct parser *p, size_t o, const char *key,
                   const char *what, const char *ph, int *out) {
  double v = 0;
  size_t n;
  if (need_number(p, o, key, what, ph, &v))
    return -1;
  if (v < 0 || v > INT_MAX || v != floor(v)) {
    n = member(p, o, key);
    return fail(p, p->nodes[n].line,
                "%s: \"%s\": expected an integer in [0, %d], got %.*s", what,
                key, INT_MAX, num_len(p, n), p->src + p->nodes[n].str);
  }
  *out = (int)v;
  return 0;
}

/* Writes value v as tooltip text: strings bare, containers as JSON-like
 * lists. */
static void value_render(const struct parser *p, size_t v, struct buf *b) {
  const struct jnode *n = &p->nodes[v];
  switch (n->type) {
  case J_NUMBER:
    buf_add(b, p->src + n->str, n->len);
    break;
  case J_STRING:
    buf_add(b, p->chars.p + n->str, n->len);
    break;
  case J_ARRAY:
  case J_OBJECT:
    buf_add(b, n->type == J_ARRAY ? "[" : "{", 1);
    for (size_t k = n->kid; k; k = p->nodes[k].next) {
      if (k != n->kid)
        buf_add(b, ", ", 2);
      if (n->type == J_OBJECT) {
        buf_add(b, p->chars.p + p->nodes[k].key, p->nodes[k].keylen);
        buf_add(b, ": ", 2);
      }
      value_render(p, k, b);
    }
    buf_add(b, n->type == J_ARRAY ? "]" : "}", 1);
    break;
  default:
    buf_add(b, type_name(n->type), strlen(type_name(n->type)));
  }
}

static unsigned char cat_of(const char *cat) {
  static const struct {
    const char *name;
    unsigned char cat;
  } cats[] = {{"host", CAT_HOST},     {"dispatch", CAT_DISPATCH},
              {"launch", CAT_LAUNCH}, {"block", CAT_BLOCK},
              {"wait", CAT_WAIT},     {"rma", CAT_RMA},
              {"coll", CAT_COLL},     {"notify", CAT_NOTIFY}};
  for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++)
    if (!strcmp(cat, cats[i].name))
      return cats[i].cat;
  return CAT_OTHER;
}

/* Reads a wait's args: what it waited on, named as pld's reports name it
 * ("window 'sig' cell [4, 1]"), and its condition. */
static int wait_read(struct parser *p, struct trace *t, struct event *e,
                     size_t args, const char *what, const char *name) {
  size_t window = 0, cell = 0, cmp = 0, expected;
  if (args && (member_typed(p, args, "window", J_STRING, what, &window) ||
               member_typed(p, args, "cell", J_ARRAY, what, &cell) ||
               member_typed(p, args, "cmp", J_STRING, what, &cmp)))
    return -1;
  for (size_t k = cell ? p->nodes[cell].kid : 0; k; k = p->nodes[k].next)
    if (p->nodes[k].type != J_NUMBER)
      return fail(p, p->nodes[k].line,
                  "%s: \"cell\": expected an array of numbers, got an array "
                  "holding %s",
                  what, type_name(p->nodes[k].type));
  struct buf on = {0};
  if (window && cell) {
    buf_printf(&on, "window '%s' cell ", str_of(p, window));
    value_render(p, cell, &on);
  } else {
    buf_printf(&on, "%s", strncmp(name, "wait ", 5) ? name : name + 5);
  }
  e->on = name_add(&t->names, on.p, on.n);
  free(on.p);
  expected = args ? member(p, args, "expected") : 0;
  if (cmp && expected) {
    struct buf b = {0};
    buf_printf(&b, "%s ", str_of(p, cmp));
    value_render(p, expected, &b);
    e->cond = name_add(&t->names, b.p, b.n);
    free(b.p);
  }
  if (args && member_typed(p, args, "outcome", J_STRING, what, &cmp))
    return -1;
  if (args && cmp)
    e->outcome = name_addz(&t->names, str_of(p, cmp));
  return 0;
}

/* Reads event i of traceEvents, the tree at node o, into t. */
static int event_read(struct parser *p, struct trace *t, size_t o, size_t i) {
  struct event e;
  char what[48], in_args[56]; /* names for messages */
  size_t ph, name, cat, args;
  const char *nm, *phs;
  snprintf(what, sizeof what, "traceEvents[%zu]", i);
  snprintf(in_args, sizeof in_args, "%s.args", what);
  if (p->nodes[o].type != J_OBJECT)
    return fail(p, p->nodes[o].line, "%s: expected an event object, got %s",
                what, type_name(p->nodes[o].type));
  memset(&e, 0, sizeof e);
  e.index = i;
  e.line = p->nodes[o].line;
  e.args = e.src = e.block = NONE;
  e.tid = -1;
  if (member_typed(p, o, "ph", J_STRING, what, &ph) ||
      member_typed(p, o, "name", J_STRING, what, &name) ||
      member_typed(p, o, "cat", J_STRING, what, &cat) ||
      member_typed(p, o, "args", J_OBJECT, what, &args))
    return -1;
  if (!ph)
    return fail(p, e.line, "%s: an event without \"ph\"", what);
  phs = str_of(p, ph);
  nm = name ? str_of(p, name) : "";
  if (p->nodes[ph].len != 1)
    return 0; /* a phase the format does not use: left out */
  e.ph = phs[0] == 'I' ? 'i' : phs[0];
  if (!strchr("Xisf", e.ph) && e.ph != 'M')
    return 0;
  if (need_id(p, o, "pid", what, phs, &e.pid))
    return -1;
  if (e.ph == 'M') {
    /* Process metadata names no thread, even when it carries a tid. */
    size_t value;
    int thread = strncmp(nm, "process_", 8) != 0;
    if (thread && (member(p, o, "tid") || !strcmp(nm, "thread_name")) &&
        need_id(p, o, "tid", what, phs, &e.tid))
      return -1;
    e.cat = CAT_META;
    if (strcmp(nm, "process_name") && strcmp(nm, "thread_name"))
      goto keep;
    if (args && member_typed(p, args, "name", J_STRING, in_args, &value))
      return -1;
    if (!args || !value)
      return fail(p, e.line, "%s: a \"%s\" event without \"args\".\"name\"",
                  what, nm);
    e.cat = thread ? CAT_THREAD_NAME : CAT_PROCESS_NAME;
    e.name = name_addz(&t->names, str_of(p, value));
    goto keep;
  }
  if (need_id(p, o, "tid", what, phs, &e.tid) ||
      need_number(p, o, "ts", what, phs, &e.ts))
    return -1;
  e.cat = cat ? cat_of(str_of(p, cat)) : CAT_OTHER;
  e.name = name_addz(&t->names, nm);
  if (e.ph == 'X') {
    if (need_number(p, o, "dur", what, phs, &e.dur))
      return -1;
    if (e.dur < 0) {
      size_t dur = member(p, o, "dur");
      return fail(p, e.line, "%s: span '%s' has a negative duration, %.*s us",
                  what, nm, num_len(p, dur), p->src + p->nodes[dur].str);
    }
    if (e.cat == CAT_BLOCK) {
      size_t kernel = 0;
      if (args && member_typed(p, args, "kernel", J_STRING, in_args, &kernel))
        return -1;
      e.kernel = kernel ? name_addz(&t->names, str_of(p, kernel)) : e.name;
    }
    if (e.cat == CAT_WAIT && wait_read(p, t, &e, args, in_args, nm))
      return -1;
  } else if (e.ph == 'i') {
    if (!strcmp(nm, "events lost")) {
      size_t lost = 0;
      e.cat = CAT_LOST;
      if (args && member_typed(p, args, "lost", J_NUMBER, in_args, &lost))
        return -1;
      if (lost && !(p->nodes[lost].num >= 0 && isfinite(p->nodes[lost].num)))
        return fail(p, p->nodes[lost].line,
                    "%s: \"lost\": expected a count, got %.*s", in_args,
                    num_len(p, lost), p->src + p->nodes[lost].str);
      if (lost)
        t->lost_instants += p->nodes[lost].num;
    }
  } else { /* 's' or 'f' */
    size_t id = member(p, o, "id");
    char text[64];
    if (!id)
      return fail(p, e.line, "%s: a \"%s\" event without \"id\"", what, phs);
    if (p->nodes[id].type == J_STRING) {
      e.id = name_add(&t->names, str_of(p, id), p->nodes[id].len);
    } else if (p->nodes[id].type == J_NUMBER) {
      snprintf(text, sizeof text, "%.17g", p->nodes[id].num);
      e.id = name_addz(&t->names, text);
    } else {
      return fail(p, p->nodes[id].line,
                  "%s: \"id\": expected a number or a string, got %s", what,
                  type_name(p->nodes[id].type));
    }
  }
  if (t->want_args && args && p->nodes[args].kid) {
    e.args = t->args.n;
    for (size_t k = p->nodes[args].kid; k; k = p->nodes[k].next) {
      if (k != p->nodes[args].kid)
        buf_add(&t->args, ", ", 2);
      buf_add(&t->args, p->chars.p + p->nodes[k].key, p->nodes[k].keylen);
      buf_add(&t->args, ": ", 2);
      value_render(p, k, &t->args);
    }
    t->args.n++; /* keeps the NUL */
  }
keep:
  t->ev = grow(t->ev, &t->evcap, t->nev, sizeof *t->ev);
  t->ev[t->nev++] = e;
  return 0;
}

/* Reads the traceEvents array (p->pos at its '['). */
static int events_read(struct parser *p, struct trace *t) {
  p->pos++;
  skip_ws(p);
  if (peek(p) == ']') {
    p->pos++;
    return 0;
  }
  for (size_t i = 0;; i++) {
    size_t v;
    scratch_reset(p);
    if (parse_value(p, 3, &v) || event_read(p, t, v, i))
      return -1;
    skip_ws(p);
    if (peek(p) == ',') {
      p->pos++;
      continue;
    }
    if (peek(p) == ']') {
      p->pos++;
      return 0;
    }
    return fail(p, p->line,
                "expected ',' or ']' after an array element, got %s", found(p));
  }
}

static int other_read(struct parser *p, struct trace *t, size_t v) {
  size_t lost;
  if (p->nodes[v].type != J_OBJECT)
    return fail(p, p->nodes[v].line,
                "\"otherData\": expected an object, got %s",
                type_name(p->nodes[v].type));
  if (member_typed(p, v, "lost_events", J_NUMBER, "\"otherData\"", &lost))
    return -1;
  if (lost && !(p->nodes[lost].num >= 0 && isfinite(p->nodes[lost].num)))
    return fail(p, p->nodes[lost].line,
                "\"otherData\": \"lost_events\": expected a count, got %.*s",
                num_len(p, lost), p->src + p->nodes[lost].str);
  if (lost)
    t->lost_other = p->nodes[lost].num;
  return 0;
}

/* Reads the whole file: an object with "traceEvents" (the JSON Object
 * Format), or a bare array of events (the JSON Array Format). */
static int trace_parse(struct parser *p, struct trace *t) {
  unsigned line;
  scratch_reset(p);
  skip_ws(p);
  line = p->line;
  if (peek(p) == '[') {
    if (events_read(p, t))
      return -1;
    t->seen_events = 1;
  } else if (peek(p) == '{') {
    p->pos++;
    skip_ws(p);
    if (peek(p) == '}')
      p->pos++;
    else
      for (;;) {
        size_t key, keylen, v;
        scratch_reset(p);
        skip_ws(p);
        if (peek(p) != '"')
          return fail(p, p->line, "expected a member name (a string), got %s",
                      found(p));
        if (parse_string(p, &key, &keylen))
          return -1;
        skip_ws(p);
        if (peek(p) != ':')
          return fail(p, p->line, "expected ':' after a member name, got %s",
                      found(p));
        p->pos++;
        skip_ws(p);
        if (!strcmp(p->chars.p + key, "traceEvents") && keylen == 11) {
          if (t->seen_events)
            return fail(p, p->line, "a second \"traceEvents\" member");
          if (peek(p) != '[') {
            if (parse_value(p, 2, &v))
              return -1;
            return fail(p, p->nodes[v].line,
                        "\"traceEvents\": expected an array, got %s",
                        type_name(p->nodes[v].type));
          }
          if (events_read(p, t))
            return -1;
          t->seen_events = 1;
        } else {
          int other = !strcmp(p->chars.p + key, "otherData") && keylen == 9;
          if (parse_value(p, 2, &v) || (other && other_read(p, t, v)))
            return -1;
        }
        skip_ws(p);
        if (peek(p) == ',') {
          p->pos++;
          continue;
        }
        if (peek(p) == '}') {
          p->pos++;
          break;
        }
        return fail(p, p->line,
                    "expected ',' or '}' after an object member, got %s",
                    found(p));
      }
  } else {
    return fail(p, p->line,
                "expected a trace (an object with \"traceEvents\"), got %s",
                found(p));
  }
  skip_ws(p);
  if (p->pos < p->len)
    return fail(p, p->line,
                "expected the end of the file after the trace, "
                "got %s",
                found(p));
  if (!t->seen_events)
    return fail(p, line, "the trace has no \"traceEvents\" member");
  return 0;
}

/* Building the views of the trace the reports need. */

/* The events, for the comparison functions of qsort. */
static const struct event *sort_ev;

static int cmp_double(double a, double b) { return (a > b) - (a < b); }

static int cmp_size(size_t a, size_t b) { return (a > b) - (a < b); }

static int cmp_lane(const void *va, const void *vb) {
  const struct lane *a = va, *b = vb;
  return a->pid != b->pid ? (a->pid > b->pid) - (a->pid < b->pid)
                          : (a->tid > b->tid) - (a->tid < b->tid);
}

static int cmp_int(const void *va, const void *vb) {
  int a = *(const int *)va, b = *(const int *)vb;
  return (a > b) - (a < b);
}

/* Spans by lane, then start, the enclosing span before those inside. */
static int cmp_span(const void *va, const void *vb) {
  size_t ia = *(const size_t *)va, ib = *(const size_t *)vb;
  const struct event *a = &sort_ev[ia], *b = &sort_ev[ib];
  int c = cmp_size(a->lane, b->lane);
  if (!c)
    c = cmp_double(a->ts, b->ts);
  if (!c)
    c = cmp_double(ev_end(b), ev_end(a));
  return c ? c : cmp_size(ia, ib);
}

static int cmp_by_end(const void *va, const void *vb) {
  size_t ia = *(const size_t *)va, ib = *(const size_t *)vb;
  const struct event *a = &sort_ev[ia], *b = &sort_ev[ib];
  int c = cmp_size(a->lane, b->lane);
  if (!c)
    c = cmp_double(ev_end(a), ev_end(b));
  if (!c)
    c = cmp_double(a->ts, b->ts);
  return c ? c : cmp_size(ia, ib);
}

static int cmp_by_start(const void *va, const void *vb) {
  size_t ia = *(const size_t *)va, ib = *(const size_t *)vb;
  const struct event *a = &sort_ev[ia], *b = &sort_ev[ib];
  int c = cmp_size(a->lane, b->lane);
  if (!c)
    c = cmp_double(a->ts, b->ts);
  return c ? c : cmp_size(ia, ib);
}

static int cmp_flow_start(const void *va, const void *vb) {
  size_t ia = *(const size_t *)va, ib = *(const size_t *)vb;
  const struct event *a = &sort_ev[ia], *b = &sort_ev[ib];
  int c = cmp_size(a->id, b->id);
  if (!c)
    c = cmp_double(a->ts, b->ts);
  return c ? c : cmp_size(ia, ib);
}

/* Collects the events for which keep() holds, sorted by cmp. */
static size_t *events_select(const struct trace *t,
                             int (*keep)(const struct event *),
                             int (*cmp)(const void *, const void *),
                             size_t *count) {
  size_t n = 0, *idx;
  for (size_t i = 0; i < t->nev; i++)
    n += (size_t)keep(&t->ev[i]);
  idx = xrealloc(NULL, n * sizeof *idx);
  n = 0;
  for (size_t i = 0; i < t->nev; i++)
    if (keep(&t->ev[i]))
      idx[n++] = i;
  sort_ev = t->ev;
  qsort(idx, n, sizeof *idx, cmp);
  *count = n;
  return idx;
}

static int is_span(const struct event *e) { return e->ph == 'X'; }
static int is_wait(const struct event *e) {
  return e->ph == 'X' && e->cat == CAT_WAIT;
}
static int is_block(const struct event *e) {
  return e->ph == 'X' && e->cat == CAT_BLOCK;
}
static int is_flow_start(const struct event *e) { return e->ph == 's'; }

/* Sets range r of each lane: where its events start in idx, an index
 * sorted by lane first, and how many there are. */
static void lanes_ranges(struct trace *t, const size_t *idx, size_t n, int r) {
  for (size_t i = 0; i < n;) {
    uint32_t lane = t->ev[idx[i]].lane;
    size_t j = i;
    while (j < n && t->ev[idx[j]].lane == lane)
      j++;
    t->lanes[lane].r[r].first = i;
    t->lanes[lane].r[r].n = j - i;
    i = j;
  }
}

/* The first wait of lane l that ends at or after time: an index into
 * t->waits (l's end when there is none). */
static size_t waits_from(const struct trace *t, const struct lane *l,
                         double time) {
  size_t lo = l->r[R_WAITS].first, hi = lo + l->r[R_WAITS].n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ev_end(&t->ev[t->waits[mid]]) < time)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The block span of lane l around time (the last to start by then, if
 * time lies in it: a core runs one block at a time), or NONE. */
static size_t block_at(const struct trace *t, const struct lane *l,
                       double time) {
  size_t lo = l->r[R_BLOCKS].first, hi = lo + l->r[R_BLOCKS].n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->ev[t->blocks[mid]].ts <= time + EPS_US)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo > l->r[R_BLOCKS].first &&
      time <= ev_end(&t->ev[t->blocks[lo - 1]]) + EPS_US)
    return t->blocks[lo - 1];
  return NONE;
}

static int trace_build(struct parser *p, struct trace *t) {
  size_t nl = 0, np = 0, nstarts, *starts;
  int *pids;
  /* The extent. */
  for (size_t i = 0; i < t->nev; i++) {
    const struct event *e = &t->ev[i];
    if (e->ph == 'M')
      continue;
    if (!t->timed || e->ts < t->t0)
      t->t0 = e->ts;
    if (!t->timed || ev_end(e) > t->t1)
      t->t1 = ev_end(e);
    t->timed = 1;
  }
  /* Lanes: each (pid, tid) that appears, and processes: each pid. */
  t->lanes = xrealloc(NULL, t->nev * sizeof *t->lanes);
  pids = xrealloc(NULL, t->nev * sizeof *pids);
  for (size_t i = 0; i < t->nev; i++) {
    pids[i] = t->ev[i].pid;
    if (t->ev[i].tid >= 0) {
      memset(&t->lanes[nl], 0, sizeof t->lanes[nl]);
      t->lanes[nl].pid = t->ev[i].pid;
      t->lanes[nl++].tid = t->ev[i].tid;
    }
  }
  qsort(t->lanes, nl, sizeof *t->lanes, cmp_lane);
  for (size_t i = 0; i < nl; i++)
    if (!t->nlanes || cmp_lane(&t->lanes[t->nlanes - 1], &t->lanes[i]))
      t->lanes[t->nlanes++] = t->lanes[i];
  t->lanes = xrealloc(t->lanes, t->nlanes * sizeof *t->lanes);
  qsort(pids, t->nev, sizeof *pids, cmp_int);
  t->procs = xrealloc(NULL, t->nev * sizeof *t->procs);
  for (size_t i = 0; i < t->nev; i++)
    if (!np || pids[i] != t->procs[np - 1].pid) {
      memset(&t->procs[np], 0, sizeof t->procs[np]);
      t->procs[np++].pid = pids[i];
    }
  t->nprocs = np;
  t->procs = xrealloc(t->procs, np * sizeof *t->procs);
  free(pids);
  for (size_t i = 0, l = 0; i < np; i++) {
    t->procs[i].lanes = l;
    while (l < t->nlanes && t->lanes[l].pid == t->procs[i].pid)
      l++;
    t->procs[i].nlanes = l - t->procs[i].lanes;
  }
  for (size_t i = 0; i < t->nev; i++) {
    struct event *e = &t->ev[i];
    if (e->tid >= 0) {
      struct lane key = {.pid = e->pid, .tid = e->tid}, *l;
      l = bsearch(&key, t->lanes, t->nlanes, sizeof key, cmp_lane);
      e->lane = (uint32_t)(l - t->lanes);
      if (e->cat == CAT_THREAD_NAME)
        l->name = e->name;
    } else if (e->cat == CAT_PROCESS_NAME) {
      /* cmp_int reads pid, the first member of a struct proc. */
      struct proc *pr =
          bsearch(&e->pid, t->procs, np, sizeof *t->procs, cmp_int);
      pr->name = e->name;
    }
  }
  /* Spans, waits and blocks by lane. */
  t->spans = events_select(t, is_span, cmp_span, &t->nspans);
  t->waits = events_select(t, is_wait, cmp_by_end, &t->nwaits);
  t->blocks = events_select(t, is_block, cmp_by_start, &t->nblocks);
  lanes_ranges(t, t->spans, t->nspans, R_SPANS);
  lanes_ranges(t, t->waits, t->nwaits, R_WAITS);
  lanes_ranges(t, t->blocks, t->nblocks, R_BLOCKS);
  /* Each wait's block. */
  for (size_t w = 0; w < t->nwaits; w++) {
    struct event *e = &t->ev[t->waits[w]];
    e->block = block_at(t, &t->lanes[e->lane], e->ts);
  }
  /* Flows: each "f" finds its "s" (the last one with its id by then, when
   * ids repeat) and binds to the wait of its lane that it ends in. */
  starts = events_select(t, is_flow_start, cmp_flow_start, &nstarts);
  for (size_t i = 0; i < t->nev; i++) {
    struct event *f = &t->ev[i];
    size_t lo = 0, hi = nstarts, first, w;
    const struct lane *l;
    if (f->ph != 'f')
      continue;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (t->ev[starts[mid]].id < f->id)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == nstarts || t->ev[starts[lo]].id != f->id) {
      free(starts);
      return fail(p, f->line,
                  "traceEvents[%zu]: flow end (\"f\") with id %s has no "
                  "flow start (\"s\") with that id",
                  f->index, name_of(&t->names, f->id));
    }
    first = lo;
    while (lo + 1 < nstarts && t->ev[starts[lo + 1]].id == f->id &&
           t->ev[starts[lo + 1]].ts <= f->ts + EPS_US)
      lo++;
    f->src = starts[lo];
    if (t->ev[f->src].ts > f->ts + EPS_US)
      f->src = starts[first];
    l = &t->lanes[f->lane];
    w = waits_from(t, l, f->ts - EPS_US);
    if (w < l->r[R_WAITS].first + l->r[R_WAITS].n &&
        t->ev[t->waits[w]].ts <= f->ts + EPS_US) {
      struct event *e = &t->ev[t->waits[w]];
      if (e->src == NONE || t->ev[f->src].ts > t->ev[e->src].ts)
        e->src = f->src;
    }
  }
  free(starts);
  return 0;
}

/* The summary. */

/* Who a lane is, in a sentence: "rank 1 AIV core 0". */
static void lane_who(const struct trace *t, uint32_t lane, char *out,
                     size_t size) {
  const struct lane *l = &t->lanes[lane];
  char thread[32];
  const char *tn = thread;
  if (l->name)
    tn = name_of(&t->names, l->name);
  else
    snprintf(thread, sizeof thread, "thread %d", l->tid);
  if (l->pid == 0 && !strcmp(tn, "host"))
    snprintf(out, size, "host");
  else if (l->pid == 0)
    snprintf(out, size, "host %s", tn);
  else
    snprintf(out, size, "rank %d %s", l->pid - 1, tn);
}

static const char *proc_label(const struct trace *t, const struct proc *pr,
                              char *out, size_t size) {
  if (pr->name)
    return name_of(&t->names, pr->name);
  if (pr->pid == 0)
    return "host";
  snprintf(out, size, "rank %d", pr->pid - 1);
  return out;
}

struct kstat {
  uint32_t kernel;
  size_t count;
  double total, longest;
};

static int cmp_kstat(const void *va, const void *vb) {
  const struct kstat *a = va, *b = vb;
  int c = cmp_double(b->total, a->total);
  return c ? c : cmp_size(a->kernel, b->kernel);
}

static void print_kernels(const struct trace *t) {
  struct kstat *ks = xrealloc(NULL, t->names.n * sizeof *ks);
  size_t n = 0;
  int width = 6;
  memset(ks, 0, t->names.n * sizeof *ks);
  for (size_t i = 0; i < t->nblocks; i++) {
    const struct event *e = &t->ev[t->blocks[i]];
    struct kstat *k = &ks[e->kernel];
    k->kernel = e->kernel;
    k->count++;
    k->total += e->dur;
    if (e->dur > k->longest)
      k->longest = e->dur;
  }
  for (size_t i = 0; i < t->names.n; i++)
    if (ks[i].count) {
      ks[n++] = ks[i];
      if (name_len(&t->names, ks[i].kernel) > (size_t)width)
        width = (int)name_len(&t->names, ks[i].kernel);
    }
  if (!n) {
    printf("kernels: none (no block spans)\n");
    free(ks);
    return;
  }
  qsort(ks, n, sizeof *ks, cmp_kstat);
  printf("kernels (block spans), by total time:\n");
  printf("  %-*s %8s %14s %12s %12s\n", width, "kernel", "count", "total us",
         "mean us", "longest us");
  for (size_t i = 0; i < n; i++)
    printf("  %-*s %8zu %14.3f %12.3f %12.3f\n", width,
           name_of(&t->names, ks[i].kernel), ks[i].count, ks[i].total,
           ks[i].total / (double)ks[i].count, ks[i].longest);
  free(ks);
}

/* For each rank, over the trace's extent and the rank's core lanes: the
 * share of time in a block and not waiting (busy), waiting, and neither
 * (idle). */
static void print_ranks(const struct trace *t) {
  double extent = t->t1 - t->t0;
  int any = 0;
  for (size_t i = 0; i < t->nprocs; i++) {
    const struct proc *pr = &t->procs[i];
    double blocks = 0, waits = 0, inside = 0, span, busy, waiting;
    size_t cores = 0;
    char buf[32];
    if (pr->pid < 1)
      continue;
    if (!any)
      printf("ranks, over %.3f us (busy: in a block and not waiting):\n",
             extent);
    any = 1;
    for (size_t l = pr->lanes; l < pr->lanes + pr->nlanes; l++) {
      const struct lane *ln = &t->lanes[l];
      if (ln->tid < 1)
        continue;
      cores++;
      const struct range *rb = &ln->r[R_BLOCKS], *rw = &ln->r[R_WAITS];
      for (size_t b = rb->first; b < rb->first + rb->n; b++)
        blocks += t->ev[t->blocks[b]].dur;
      for (size_t w = rw->first; w < rw->first + rw->n; w++) {
        const struct event *e = &t->ev[t->waits[w]];
        waits += e->dur;
        if (e->block != NONE)
          inside += e->dur;
      }
    }
    span = (double)cores * extent;
    if (span <= 0) {
      printf("  %s: %zu core lane%s, no time to share\n",
             proc_label(t, pr, buf, sizeof buf), cores, cores == 1 ? "" : "s");
      continue;
    }
    busy = 100 * (blocks - inside) / span;
    waiting = 100 * waits / span;
    printf("  %s: %zu core lane%s, busy %.2f%%, waiting %.2f%%, idle %.2f%%\n",
           proc_label(t, pr, buf, sizeof buf), cores, cores == 1 ? "" : "s",
           busy, waiting, 100 - busy - waiting);
  }
  if (!any)
    printf("ranks: none\n");
}

/* The chain of waits that decided the run's length: from the block that
 * ends last, backwards, each wait that held its lane up last and, when a
 * flow says which notify released it, on the notifying lane from the
 * notify's time. */
static void print_chain(struct trace *t) {
  size_t last = NONE;
  double now;
  uint32_t lane;
  char who[128], by[128];
  unsigned char *seen;
  if (!t->nwaits) {
    printf("critical chain: no waits recorded\n");
    return;
  }
  for (size_t i = 0; i < t->nblocks; i++)
    if (last == NONE ||
        ev_end(&t->ev[t->blocks[i]]) > ev_end(&t->ev[last]) + EPS_US)
      last = t->blocks[i];
  if (last == NONE) {
    printf("critical chain: no block spans to start from\n");
    return;
  }
  lane = t->ev[last].lane;
  now = ev_end(&t->ev[last]);
  lane_who(t, lane, who, sizeof who);
  printf("critical chain, back from the block that ends last (%s kernel %s, "
         "at %.3f us):\n",
         who, name_of(&t->names, t->ev[last].kernel), now);
  seen = xrealloc(NULL, t->nwaits);
  memset(seen, 0, t->nwaits);
  for (;;) {
    const struct lane *l = &t->lanes[lane];
    size_t w = waits_from(t, l, now + EPS_US), b = block_at(t, l, now);
    const struct event *e;
    /* waits_from gives the first to end after now: the one before it is
     * the latest to end by now.  A wait that ended before the block
     * running at now began (an earlier block's, or an earlier run's) did
     * not hold this block up. */
    if (w == l->r[R_WAITS].first ||
        (b != NONE && ev_end(&t->ev[t->waits[w - 1]]) < t->ev[b].ts - EPS_US)) {
      lane_who(t, lane, who, sizeof who);
      if (b != NONE)
        printf("  %s: no wait of its block (kernel %s, from %.3f us) ends "
               "by %.3f us: the chain starts there\n",
               who, name_of(&t->names, t->ev[b].kernel), t->ev[b].ts, now);
      else
        printf("  %s: no wait ends by %.3f us: the chain starts there\n", who,
               now);
      break;
    }
    w--;
    if (seen[w]) {
      printf("  (the chain comes back to a wait it passed: stopped)\n");
      break;
    }
    seen[w] = 1;
    t->ev[t->waits[w]].critical = 1;
    e = &t->ev[t->waits[w]];
    lane_who(t, lane, who, sizeof who);
    printf("  %s", who);
    if (e->block != NONE)
      printf(" kernel %s", name_of(&t->names, t->ev[e->block].kernel));
    printf(": waited %.3f us on %s", e->dur, name_of(&t->names, e->on));
    if (e->cond)
      printf(" (%s)", name_of(&t->names, e->cond));
    if (e->src == NONE) {
      if (e->outcome && !strcmp(name_of(&t->names, e->outcome), "stopped"))
        printf(", stopped before it was satisfied\n");
      else
        printf(", released by no recorded notify\n");
      break;
    }
    lane_who(t, t->ev[e->src].lane, by, sizeof by);
    printf(", released by %s at %.3f us\n", by, t->ev[e->src].ts);
    lane = t->ev[e->src].lane;
    now = t->ev[e->src].ts;
  }
  free(seen);
}

static void print_summary(struct trace *t) {
  double lost =
      t->lost_other > t->lost_instants ? t->lost_other : t->lost_instants;
  printf("%s: %zu events", t->path, t->nev);
  if (t->timed)
    printf(", from %.3f to %.3f us (%.3f us)", t->t0, t->t1, t->t1 - t->t0);
  printf("\n\n");
  print_kernels(t);
  printf("\n");
  print_ranks(t);
  printf("\n");
  print_chain(t);
  if (lost > 0)
    printf("\nwarning: %.0f events lost: the trace misses them "
           "(PLD_TRACE_EVENTS bounds each thread's events per run)\n",
           lost);
}

/* The SVG. */

/* Writes s as XML text or attribute value.  Characters XML does not allow
 * (control characters, U+FFFE, U+FFFF) become '?'. */
static void xml_put(FILE *f, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '&')
      fputs("&amp;", f);
    else if (c == '<')
      fputs("&lt;", f);
    else if (c == '>')
      fputs("&gt;", f);
    else if (c == '"')
      fputs("&quot;", f);
    else if (c == '\'')
      fputs("&apos;", f);
    else if (c == '\n' || c == '\r' || c == '\t')
      fprintf(f, "&#%d;", c); /* kept through attribute normalisation */
    else if (c < 0x20)
      fputc('?', f);
    else if (c == 0xef && (unsigned char)s[1] == 0xbf &&
             ((unsigned char)s[2] == 0xbe || (unsigned char)s[2] == 0xbf)) {
      fputc('?', f);
      s += 2;
    } else
      fputc(c, f);
  }
}

/* A kernel's colour, as #rrggbb: from its name's hash, mixed so that
 * similar names part, a hue and one of a few saturations and lightnesses. */
static void kernel_colour(const struct names *nm, uint32_t kernel,
                          char out[8]) {
  uint32_t k = hash_bytes(name_of(nm, kernel), name_len(nm, kernel));
  double h, s, l, c, x, m, r = 0, g = 0, b = 0;
  k ^= k >> 16;
  k *= 0x7feb352du;
  k ^= k >> 15;
  k *= 0x846ca68bu;
  k ^= k >> 16;
  h = (double)(k % 360u) / 60.0;
  s = 0.5 + 0.2 * (double)((k >> 9) % 2u);
  l = 0.48 + 0.1 * (double)((k >> 10) % 3u);
  c = (1 - fabs(2 * l - 1)) * s;
  x = c * (1 - fabs(fmod(h, 2) - 1));
  m = l - c / 2;
  switch ((int)h) {
  case 0:
    r = c, g = x;
    break;
  case 1:
    r = x, g = c;
    break;
  case 2:
    g = c, b = x;
    break;
  case 3:
    g = x, b = c;
    break;
  case 4:
    r = x, b = c;
    break;
  default:
    r = c, b = x;
  }
  snprintf(out, 8, "#%02x%02x%02x", (unsigned)lround((r + m) * 255),
           (unsigned)lround((g + m) * 255), (unsigned)lround((b + m) * 255));
}

static const char *neutral_fill(unsigned char cat) {
  switch (cat) {
  case CAT_HOST:
    return "#9e9e9e";
  case CAT_DISPATCH:
    return "#b0bec5";
  case CAT_LAUNCH:
    return "#d5dde1";
  case CAT_RMA:
    return "#78909c";
  case CAT_COLL:
    return "#a1887f";
  default:
    return "#bdbdbd";
  }
}

static const char *cat_class(unsigned char cat) {
  static const char *const names[] = {
      "other", "host",   "dispatch", "launch", "block", "wait", "rma",
      "coll",  "notify", "lost",     "meta",   "meta",  "meta"};
  return names[cat];
}

struct svg {
  FILE *f;
  const struct trace *t;
  double x0, scale; /* x = x0 + (time - t0) * scale */
  int width, height;
};

static double svg_x(const struct svg *s, double time) {
  return s->x0 + (time - s->t->t0) * s->scale;
}

/* An event's tooltip: name, times, args. */
static void svg_title(const struct svg *s, const struct event *e,
                      const char *name) {
  const struct trace *t = s->t;
  char text[160];
  fputs("<title>", s->f);
  xml_put(s->f, name);
  if (e->ph == 'X')
    snprintf(text, sizeof text, " (%s)\n%.3f to %.3f us, %.3f us",
             cat_class(e->cat), e->ts, ev_end(e), e->dur);
  else
    snprintf(text, sizeof text, " (%s)\nat %.3f us", cat_class(e->cat), e->ts);
  xml_put(s->f, text);
  if (e->args != NONE) {
    xml_put(s->f, "\n");
    xml_put(s->f, t->args.p + e->args);
  }
  fputs("</title>", s->f);
}

/* The spans of one lane, each inside the lane's height shrinking with how
 * deep it nests, then its instants. */
static void svg_lane(struct svg *s, const struct lane *l, double *stack,
                     const size_t *instants, size_t ninstants) {
  const struct trace *t = s->t;
  size_t depth = 0;
  for (size_t i = l->r[R_SPANS].first;
       i < l->r[R_SPANS].first + l->r[R_SPANS].n; i++) {
    const struct event *e = &t->ev[t->spans[i]];
    double h, x, w;
    char fill[8];
    const char *name = name_of(&t->names, e->name);
    while (depth && stack[depth - 1] <= e->ts + EPS_US)
      depth--;
    h = SVG_LANE_H * pow(0.75, (double)depth);
    if (h < 4)
      h = 4;
    stack[depth++] = ev_end(e);
    x = svg_x(s, e->ts);
    w = e->dur * s->scale;
    if (w < 0.5)
      w = 0.5;
    fprintf(s->f,
            "<rect class=\"span %s\" x=\"%.2f\" y=\"%.2f\" "
            "width=\"%.2f\" height=\"%.2f\"",
            cat_class(e->cat), x, l->y + (SVG_LANE_H - h) / 2, w, h);
    if (e->cat == CAT_BLOCK) {
      kernel_colour(&t->names, e->kernel, fill);
      fprintf(s->f, " fill=\"%s\" data-kernel=\"", fill);
      xml_put(s->f, name_of(&t->names, e->kernel));
      fputs("\"", s->f);
    } else if (e->cat == CAT_WAIT) {
      /* Drawn over its block, hatched; those of the critical chain with a
       * red outline. */
      fprintf(s->f, " fill=\"url(#hatch)\" stroke=\"%s\" stroke-width=\"%s\"%s",
              e->critical ? "#d50000" : "#000", e->critical ? "2" : "0.6",
              e->critical ? " data-critical=\"1\"" : "");
    } else {
      fprintf(s->f, " fill=\"%s\"", neutral_fill(e->cat));
    }
    fputs(">", s->f);
    svg_title(s, e, name);
    fputs("</rect>\n", s->f);
  }
  for (size_t i = 0; i < ninstants; i++) {
    const struct event *e = &t->ev[instants[i]];
    double x = svg_x(s, e->ts);
    fprintf(s->f,
            "<path class=\"%s\" d=\"M%.2f,%.2f l-3,-5 h6 z\" fill=\"%s\">",
            e->cat == CAT_LOST ? "lost" : "notify", x, l->y + 5,
            e->cat == CAT_LOST ? "#d50000" : "#e65100");
    svg_title(s, e, name_of(&t->names, e->name));
    fputs("</path>\n", s->f);
  }
}

/* A round step for about ten ticks over span. */
static double tick_step(double span, int *decimals) {
  double raw = span / 10, mag = pow(10, floor(log10(raw))), norm = raw / mag;
  double step = (norm < 1.5 ? 1 : norm < 3.5 ? 2 : norm < 7.5 ? 5 : 10) * mag;
  *decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
  return step;
}

static int cmp_instant(const void *va, const void *vb) {
  size_t ia = *(const size_t *)va, ib = *(const size_t *)vb;
  int c = cmp_size(sort_ev[ia].lane, sort_ev[ib].lane);
  return c ? c : cmp_size(ia, ib);
}

static int is_mark(const struct event *e) {
  return e->ph == 'i' && (e->cat == CAT_NOTIFY || e->cat == CAT_LOST);
}

static int svg_write(struct trace *t, const char *out, int width) {
  struct svg s = {.t = t, .width = width};
  double y = SVG_TOP, span = t->t1 - t->t0, step, lanes_end;
  size_t nk = 0, nmarks, *marks, m = 0;
  int decimals, per_row;
  uint32_t *kernels;
  double *stack;
  char label[32];
  /* Where things go. */
  for (size_t i = 0; i < t->nprocs; i++) {
    t->procs[i].y = y;
    y += SVG_GROUP_H;
    for (size_t l = t->procs[i].lanes;
         l < t->procs[i].lanes + t->procs[i].nlanes; l++) {
      t->lanes[l].y = y;
      y += SVG_LANE_H + SVG_LANE_GAP;
    }
    y += SVG_GROUP_GAP;
  }
  lanes_end = y;
  kernels = xrealloc(NULL, t->names.n * sizeof *kernels);
  {
    unsigned char *have = xrealloc(NULL, t->names.n);
    memset(have, 0, t->names.n);
    for (size_t i = 0; i < t->nblocks; i++)
      have[t->ev[t->blocks[i]].kernel] = 1;
    for (size_t i = 0; i < t->names.n; i++)
      if (have[i])
        kernels[nk++] = (uint32_t)i;
    free(have);
  }
  per_row = (width - 2 * SVG_MARGIN) / SVG_LEGEND_W;
  if (per_row < 1)
    per_row = 1;
  y += 2 * SVG_LEGEND_H; /* the key row, then the kernels' row title */
  y += SVG_LEGEND_H * (double)((nk + (size_t)per_row - 1) / (size_t)per_row);
  s.height = (int)ceil(y) + SVG_MARGIN;
  if (!(span > 0))
    span = 1;
  s.x0 = SVG_LABEL_W;
  s.scale = (width - SVG_LABEL_W - SVG_MARGIN) / span;
  s.f = fopen(out, "w");
  if (!s.f) {
    fprintf(stderr, "pld-trace: cannot create %s: %s\n", out, strerror(errno));
    free(kernels);
    return -1;
  }
  fprintf(s.f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
          "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
          "font-size=\"11\">\n",
          width, s.height, width, s.height);
  fputs("<defs>\n"
        "<pattern id=\"hatch\" width=\"5\" height=\"5\" "
        "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        "<rect width=\"5\" height=\"5\" fill=\"#37474f\"/>"
        "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"5\" stroke=\"#eceff1\" "
        "stroke-width=\"1.5\"/></pattern>\n"
        "<marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
        "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\">"
        "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#c62828\"/></marker>\n"
        "</defs>\n"
        "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n",
        s.f);
  fprintf(s.f, "<text class=\"title\" x=\"%d\" y=\"%d\" font-size=\"14\">",
          SVG_MARGIN, SVG_MARGIN + 8);
  xml_put(s.f, t->path);
  fprintf(s.f, ": %zu events, %.3f us</text>\n", t->nev,
          t->timed ? t->t1 - t->t0 : 0.0);
  /* The time axis, its ticks and a grid through the lanes. */
  step = tick_step(span, &decimals);
  fprintf(s.f,
          "<g class=\"axis\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
          "stroke=\"#000\"/>\n",
          SVG_LABEL_W, SVG_AXIS_Y, width - SVG_MARGIN, SVG_AXIS_Y);
  for (double k = ceil(t->t0 / step - 1e-9), n = 0;
       k * step <= t->t0 + span + step * 1e-6 && n < 100; k++, n++) {
    double tick = k == 0 ? 0 : k * step, x = svg_x(&s, tick); /* no -0 */
    fprintf(s.f,
            "<line class=\"tick\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" "
            "y2=\"%.0f\" stroke=\"#e0e0e0\"/>"
            "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%.*f us</text>\n",
            x, SVG_AXIS_Y, x, lanes_end, x, SVG_AXIS_Y - 6, decimals, tick);
  }
  fputs("</g>\n", s.f);
  /* The lanes, by process. */
  sort_ev = t->ev;
  marks = events_select(t, is_mark, cmp_instant, &nmarks);
  stack = xrealloc(NULL, (t->nspans + 1) * sizeof *stack);
  for (size_t i = 0; i < t->nprocs; i++) {
    const struct proc *pr = &t->procs[i];
    fprintf(s.f, "<g class=\"process\" data-pid=\"%d\">\n", pr->pid);
    fprintf(s.f,
            "<text class=\"process-label\" x=\"%d\" y=\"%.2f\" "
            "font-weight=\"bold\">",
            SVG_MARGIN, pr->y + SVG_GROUP_H - 6);
    xml_put(s.f, proc_label(t, pr, label, sizeof label));
    fputs("</text>\n", s.f);
    for (size_t l = pr->lanes; l < pr->lanes + pr->nlanes; l++) {
      const struct lane *ln = &t->lanes[l];
      size_t first = m;
      while (m < nmarks && t->ev[marks[m]].lane == l)
        m++;
      fprintf(s.f, "<g class=\"lane\" data-pid=\"%d\" data-tid=\"%d\">\n",
              ln->pid, ln->tid);
      fprintf(s.f,
              "<rect class=\"lane-bg\" x=\"%d\" y=\"%.2f\" width=\"%d\" "
              "height=\"%d\" fill=\"#f5f5f5\"/>\n",
              SVG_LABEL_W, ln->y, width - SVG_LABEL_W - SVG_MARGIN, SVG_LANE_H);
      fprintf(s.f, "<text class=\"lane-label\" x=\"%d\" y=\"%.2f\">",
              SVG_MARGIN + 10, ln->y + SVG_LANE_H - 5);
      if (ln->name)
        xml_put(s.f, name_of(&t->names, ln->name));
      else
        fprintf(s.f, "thread %d", ln->tid);
      fputs("</text>\n", s.f);
      svg_lane(&s, ln, stack, marks + first, m - first);
      fputs("</g>\n", s.f);
    }
    fputs("</g>\n", s.f);
  }
  free(stack);
  free(marks);
  /* The flows, over the lanes: from the notifying lane to the waiting. */
  fputs("<g class=\"flows\">\n", s.f);
  for (size_t i = 0; i < t->nev; i++) {
    const struct event *f = &t->ev[i], *st;
    char from[128], to[128];
    if (f->ph != 'f')
      continue;
    st = &t->ev[f->src];
    lane_who(t, st->lane, from, sizeof from);
    lane_who(t, f->lane, to, sizeof to);
    fprintf(s.f,
            "<line class=\"flow\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" "
            "y2=\"%.2f\" stroke=\"#c62828\" stroke-width=\"1\" "
            "marker-end=\"url(#arrow)\"><title>",
            svg_x(&s, st->ts), t->lanes[st->lane].y + SVG_LANE_H / 2.0,
            svg_x(&s, f->ts), t->lanes[f->lane].y + SVG_LANE_H / 2.0);
    xml_put(s.f, name_of(&t->names, f->id));
    fputs(": ", s.f);
    xml_put(s.f, from);
    fprintf(s.f, " at %.3f us released ", st->ts);
    xml_put(s.f, to);
    fprintf(s.f, " at %.3f us</title></line>\n", f->ts);
  }
  fputs("</g>\n", s.f);
  /* The legend: a key of the other kinds of span, then the kernels. */
  y = lanes_end;
  {
    static const unsigned char keyed[] = {CAT_HOST, CAT_DISPATCH, CAT_LAUNCH,
                                          CAT_RMA, CAT_COLL};
    double x = SVG_MARGIN;
    fputs("<g class=\"legend\">\n", s.f);
    fprintf(s.f,
            "<g class=\"legend-key\"><rect x=\"%.0f\" y=\"%.2f\" width=\"12\" "
            "height=\"12\" fill=\"url(#hatch)\" stroke=\"#000\"/>"
            "<text x=\"%.0f\" y=\"%.2f\">wait</text></g>\n",
            x, y, x + 16, y + 10);
    x += 70;
    fprintf(s.f,
            "<g class=\"legend-key\"><rect x=\"%.0f\" y=\"%.2f\" width=\"12\" "
            "height=\"12\" fill=\"url(#hatch)\" stroke=\"#d50000\" "
            "stroke-width=\"2\"/><text x=\"%.0f\" y=\"%.2f\">wait on the "
            "critical chain</text></g>\n",
            x, y, x + 16, y + 10);
    x += 170;
    for (size_t i = 0; i < sizeof keyed; i++, x += 80)
      fprintf(s.f,
              "<g class=\"legend-key\"><rect x=\"%.0f\" y=\"%.2f\" "
              "width=\"12\" height=\"12\" fill=\"%s\"/>"
              "<text x=\"%.0f\" y=\"%.2f\">%s</text></g>\n",
              x, y, neutral_fill(keyed[i]), x + 16, y + 10,
              cat_class(keyed[i]));
    fprintf(s.f,
            "<g class=\"legend-key\"><path d=\"M%.0f,%.2f l-3,-5 h6 z\" "
            "fill=\"#e65100\"/><text x=\"%.0f\" y=\"%.2f\">notify</text>"
            "</g>\n",
            x + 6, y + 9, x + 16, y + 10);
    x += 80;
    fprintf(s.f,
            "<g class=\"legend-key\"><line x1=\"%.0f\" y1=\"%.2f\" "
            "x2=\"%.0f\" y2=\"%.2f\" stroke=\"#c62828\" "
            "marker-end=\"url(#arrow)\"/><text x=\"%.0f\" y=\"%.2f\">"
            "signal (notify to wait)</text></g>\n",
            x, y + 6, x + 24, y + 6, x + 30, y + 10);
    y += SVG_LEGEND_H;
    fprintf(s.f, "<text x=\"%d\" y=\"%.2f\">%s</text>\n", SVG_MARGIN, y + 10,
            nk ? "kernels:" : "kernels: none");
    y += SVG_LEGEND_H;
    for (size_t i = 0; i < nk; i++) {
      char fill[8];
      double kx = SVG_MARGIN + (double)(i % (size_t)per_row) * SVG_LEGEND_W,
             ky = y + (double)(i / (size_t)per_row) * SVG_LEGEND_H;
      kernel_colour(&t->names, kernels[i], fill);
      fprintf(s.f,
              "<g class=\"legend-kernel\"><rect x=\"%.0f\" y=\"%.2f\" "
              "width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.0f\" "
              "y=\"%.2f\">",
              kx, ky, fill, kx + 16, ky + 10);
      xml_put(s.f, name_of(&t->names, kernels[i]));
      fputs("</text></g>\n", s.f);
    }
    fputs("</g>\n", s.f);
  }
  fputs("</svg>\n", s.f);
  free(kernels);
  if (ferror(s.f) | fclose(s.f)) {
    fprintf(stderr, "pld-trace: cannot write %s: %s\n", out, strerror(errno));
    return -1;
  }
  return 0;
}

/* The file, whole, followed by a NUL. */
static char *file_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  struct buf b = {0};
  if (!f) {
    fprintf(stderr, "pld-trace: cannot open %s: %s\n", path, strerror(errno));
    return NULL;
  }
  buf_reserve(&b, 0);
  for (;;) {
    size_t got;
    buf_reserve(&b, 1 << 16);
    got = fread(b.p + b.n, 1, b.cap - b.n - 1, f);
    b.n += got;
    if (got == 0)
      break;
  }
  if (ferror(f)) {
    fprintf(stderr, "pld-trace: cannot read %s: %s\n", path, strerror(errno));
    fclose(f);
    free(b.p);
    return NULL;
  }
  fclose(f);
  b.p[b.n] = '\0';
  *len = b.n;
  return b.p;
}

/* A usage mistake: one line naming it, with the usage; the status 2. */
static int usage_error(const char *fmt, ...) PRINTF_LIKE(1, 2);
static int usage_error(const char *fmt, ...) {
  va_list ap;
  fputs("pld-trace: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs(" (" USAGE ")\n", stderr);
  return 2;
}

/* ---- the diagnostics files (PLD_DIAG; docs/diagnostics-files.md) -------- */

/* Member key of object o, of the type given, present: its node, or 0 with
 * the parser's message set ("what: ..."). */
static size_t diag_need(struct parser *p, size_t o, const char *key,
                        unsigned char type, const char *what) {
  size_t n;
  if (p->nodes[o].type != J_OBJECT) {
    fail(p, p->nodes[o].line, "%s: expected an object, got %s", what,
         type_name(p->nodes[o].type));
    return 0;
  }
  if (member_typed(p, o, key, type, what, &n))
    return 0;
  if (!n)
    fail(p, p->nodes[o].line, "%s: expected a \"%s\" member (%s), got none",
         what, key, type_name(type));
  return n;
}

/* A number member that must be an integer of at least 0: -1 if not. */
static long long diag_int(struct parser *p, size_t o, const char *key,
                          const char *what) {
  size_t n = diag_need(p, o, key, J_NUMBER, what);
  if (!n)
    return -1;
  double v = p->nodes[n].num;
  if (v < 0 || v != floor(v) || v > 9e15) {
    fail(p, p->nodes[n].line,
         "%s: \"%s\": expected an integer of 0 or more, got %.*s", what, key,
         num_len(p, n), p->src + p->nodes[n].str);
    return -1;
  }
  return (long long)v;
}

static const char *diag_str(struct parser *p, size_t o, const char *key,
                            const char *what) {
  size_t n = diag_need(p, o, key, J_STRING, what);
  return n ? str_of(p, n) : NULL;
}

/* Reads path whole into p (a fresh parser); -1 if it cannot. */
static int diag_load(struct parser *p, const char *path) {
  free((char *)p->src);
  p->src = file_read(path, &p->len);
  p->pos = 0;
  p->line = 1;
  return p->src ? 0 : -1;
}

/* The task of id in tasks (an array), or 0. */
static size_t diag_task(const struct parser *p, size_t tasks, long long id) {
  for (size_t k = p->nodes[tasks].kid; k; k = p->nodes[k].next) {
    size_t n = member(p, k, "id");
    if (n && p->nodes[n].type == J_NUMBER && p->nodes[n].num == (double)id)
      return k;
  }
  return 0;
}

/* deps.json of rank r's dispatch k: checked, and printed. */
static int diag_deps(struct parser *p, int r, int k) {
  size_t v, tasks, edges;
  scratch_reset(p);
  if (parse_value(p, 0, &v))
    return -1;
  skip_ws(p);
  if (p->pos < p->len)
    return fail(p, p->line, "expected the end of the file, got %s", found(p));
  const char *fmt = diag_str(p, v, "format", "deps.json");
  const char *fn = fmt ? diag_str(p, v, "function", "deps.json") : NULL;
  long long rank = fn ? diag_int(p, v, "rank", "deps.json") : -1;
  long long disp = rank >= 0 ? diag_int(p, v, "dispatch", "deps.json") : -1;
  if (disp < 0)
    return -1;
  if (strcmp(fmt, "deps"))
    return fail(p, p->nodes[v].line,
                "deps.json: \"format\": expected \"deps\", got \"%s\"", fmt);
  if (rank != r || disp != k)
    return fail(p, p->nodes[v].line,
                "deps.json: expected rank %d dispatch %d (its folder), got "
                "rank %lld dispatch %lld",
                r, k, rank, disp);
  if (!(tasks = diag_need(p, v, "tasks", J_ARRAY, "deps.json")) ||
      !(edges = diag_need(p, v, "edges", J_ARRAY, "deps.json")))
    return -1;
  size_t nt = 0, ne = 0;
  for (size_t t = p->nodes[tasks].kid; t; t = p->nodes[t].next)
    nt++;
  for (size_t e = p->nodes[edges].kid; e; e = p->nodes[e].next)
    ne++;
  printf("rank %d, dispatch %d (%s): %zu task%s, %zu edge%s\n", r, k, fn, nt,
         nt == 1 ? "" : "s", ne, ne == 1 ? "" : "s");
  for (size_t t = p->nodes[tasks].kid; t; t = p->nodes[t].next) {
    long long id = diag_int(p, t, "id", "deps.json: a task");
    const char *kernel =
        id >= 0 ? diag_str(p, t, "kernel", "deps.json: a task") : NULL;
    const char *core =
        kernel ? diag_str(p, t, "core", "deps.json: a task") : NULL;
    long long blocks =
        core ? diag_int(p, t, "blocks", "deps.json: a task") : -1;
    size_t args =
        blocks >= 0 ? diag_need(p, t, "args", J_ARRAY, "deps.json: a task") : 0;
    if (!args)
      return -1;
    printf("  task %lld: %s on %lld %s block%s:", id, kernel, blocks, core,
           blocks == 1 ? "" : "s");
    for (size_t a = p->nodes[args].kid; a; a = p->nodes[a].next) {
      const char *param = diag_str(p, a, "param", "deps.json: an argument");
      const char *kind =
          param ? diag_str(p, a, "kind", "deps.json: an argument") : NULL;
      const char *dir =
          kind ? diag_str(p, a, "dir", "deps.json: an argument") : NULL;
      if (!dir)
        return -1;
      if (!strcmp(kind, "scalar")) {
        printf("%s %s", a == p->nodes[args].kid ? "" : ",", param);
        continue;
      }
      long long bytes = diag_int(p, a, "bytes", "deps.json: an argument");
      if (bytes < 0)
        return -1;
      printf("%s %s (%s %s, %lld bytes)", a == p->nodes[args].kid ? "" : ",",
             param, dir, kind, bytes);
    }
    printf("\n");
  }
  for (size_t e = p->nodes[edges].kid; e; e = p->nodes[e].next) {
    const char *w = "deps.json: an edge";
    long long from = diag_int(p, e, "from", w);
    long long to = from >= 0 ? diag_int(p, e, "to", w) : -1;
    const char *why = to >= 0 ? diag_str(p, e, "why", w) : NULL;
    if (!why)
      return -1;
    if (!diag_task(p, tasks, from) || !diag_task(p, tasks, to) || from >= to)
      return fail(p, p->nodes[e].line,
                  "%s: expected an earlier task before a later one, both "
                  "among the tasks, got %lld -> %lld",
                  w, from, to);
    printf("  edge %lld -> %lld: %s", from, to, why);
    const char *sides[] = {"from_side", "to_side"};
    for (int i = 0; i < 2; i++) {
      size_t sd = member(p, e, sides[i]), range;
      if (!sd)
        continue;
      const char *param = diag_str(p, sd, "param", w);
      if (!param || !(range = diag_need(p, sd, "bytes", J_ARRAY, w)))
        return -1;
      size_t lo = p->nodes[range].kid, hi = lo ? p->nodes[lo].next : 0;
      size_t wr = member(p, sd, "writes");
      if (!hi || p->nodes[lo].type != J_NUMBER || p->nodes[hi].type != J_NUMBER)
        return fail(p, p->nodes[range].line,
                    "%s: \"bytes\": expected [first, end), got something "
                    "else",
                    w);
      size_t cn = member(p, sd, "counts");
      printf("%s %s%s of task %lld (%s) bytes [%.0f, %.0f)", i ? "," : ":",
             param, cn && p->nodes[cn].type == J_TRUE ? "'s counts" : "",
             i ? to : from,
             wr && p->nodes[wr].type == J_TRUE ? "written" : "read",
             p->nodes[lo].num, p->nodes[hi].num);
    }
    printf("\n");
  }
  return 0;
}

/* scope_stats.jsonl of a dispatch: each line checked, and a table. */
static int diag_stats(struct parser *p) {
  static const char *const cols[] = {
      "launches",   "blocks",    "gm_load_bytes",     "gm_store_bytes",
      "put_bytes",  "get_bytes", "remote_load_bytes", "remote_store_bytes",
      "coll_bytes", "waits"};
  int lines = 0;
  printf("  %-24s %8s %6s %9s %9s %9s %9s %9s %9s %9s %6s %10s %10s\n", "scope",
         "launches", "blocks", "gm load", "gm store", "put", "get", "r.load",
         "r.store", "coll", "waits", "wait us", "time us");
  for (;;) {
    size_t v, n;
    skip_ws(p);
    if (p->pos >= p->len)
      break;
    scratch_reset(p);
    if (parse_value(p, 0, &v))
      return -1;
    const char *scope = diag_str(p, v, "scope", "scope_stats.jsonl");
    const char *name =
        scope ? diag_str(p, v, "name", "scope_stats.jsonl") : NULL;
    if (!name)
      return -1;
    if (strcmp(scope, lines ? "task" : "dispatch"))
      return fail(p, p->nodes[v].line,
                  "scope_stats.jsonl: \"scope\": expected \"%s\" (the first "
                  "line is the dispatch's, then its tasks'), got \"%s\"",
                  lines ? "task" : "dispatch", scope);
    char label[64];
    if (lines) {
      long long id = diag_int(p, v, "task", "scope_stats.jsonl");
      if (id < 0)
        return -1;
      snprintf(label, sizeof label, "task %lld %s", id, name);
    } else {
      snprintf(label, sizeof label, "dispatch %s", name);
    }
    printf("  %-24.24s", label);
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
      long long x = diag_int(p, v, cols[c], "scope_stats.jsonl");
      if (x < 0)
        return -1;
      printf(c == 0 ? " %8lld" : c == 1 || c == 9 ? " %6lld" : " %9lld", x);
    }
    double t[3];
    const char *keys[] = {"wait_us", "start_us", "end_us"};
    for (int i = 0; i < 3; i++) {
      if (!(n = diag_need(p, v, keys[i], J_NUMBER, "scope_stats.jsonl")))
        return -1;
      t[i] = p->nodes[n].num;
    }
    if (t[2] < t[1])
      return fail(p, p->nodes[v].line,
                  "scope_stats.jsonl: expected \"end_us\" at or after "
                  "\"start_us\", got %.3f before %.3f",
                  t[2], t[1]);
    printf(" %10.3f %10.3f\n", t[0], t[2] - t[1]);
    lines++;
  }
  if (!lines)
    return fail(p, p->line,
                "scope_stats.jsonl: expected a line per scope, "
                "got none");
  return 0;
}

/* Whether path exists. */
static int diag_exists(const char *path) {
  FILE *f = fopen(path, "r");
  if (f)
    fclose(f);
  return f != NULL;
}

/* pld-trace --diag DIR: every rank's dispatches, in order. */
static int diag_main(const char *dir) {
  char base[4096], path[4200];
  struct parser p = {0};
  int status = 1, found_any = 0;
  snprintf(base, sizeof base, "%s/dfx", dir);
  snprintf(path, sizeof path, "%s/rank0", base);
  if (!diag_exists(path))
    snprintf(base, sizeof base, "%s", dir); /* the dfx folder itself */
  for (int r = 0;; r++) {
    int k;
    for (k = 0;; k++) {
      int deps, stats;
      snprintf(path, sizeof path, "%s/rank%d/d%d/deps.json", base, r, k);
      deps = diag_exists(path);
      if (deps && (diag_load(&p, path) || diag_deps(&p, r, k)))
        goto failed;
      snprintf(path, sizeof path, "%s/rank%d/d%d/scope_stats/scope_stats.jsonl",
               base, r, k);
      stats = diag_exists(path);
      if (stats && !deps)
        printf("rank %d, dispatch %d\n", r, k);
      if (stats && (diag_load(&p, path) || diag_stats(&p)))
        goto failed;
      if (!deps && !stats)
        break;
      found_any = 1;
    }
    if (k == 0)
      break;
  }
  if (!found_any) {
    fprintf(stderr,
            "pld-trace: %s: expected diagnostics files (dfx/rank0/d0/"
            "deps.json or scope_stats/scope_stats.jsonl), got none\n",
            dir);
    goto out;
  }
  status = 0;
  goto out;
failed:
  if (p.src)
    fprintf(stderr, "pld-trace: %s: line %u: %s\n", path, p.errline, p.err);
out:
  free((char *)p.src);
  free(p.nodes);
  free(p.chars.p);
  return status;
}

int main(int argc, char **argv) {
  const char *path = NULL, *out = NULL;
  int width = WIDTH_DEFAULT, status = 1;
  struct parser p = {0};
  struct trace t = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      printf(USAGE
             "\n"
             "  Reads a trace PLD_TRACE wrote and prints a summary: time per "
             "kernel,\n"
             "  each rank's busy, waiting and idle shares, the chain of "
             "waits that\n"
             "  decided the run's length, lost events.\n"
             "  -o OUT.svg   also draw the trace as an SVG swimlane\n"
             "  --width PX   the SVG's width in pixels (default %d)\n"
             "  --diag FOLDER  read the diagnostics files PLD_DIAG wrote (an "
             "artifact\n"
             "               folder, or its dfx folder) and print each rank's "
             "dispatches:\n"
             "               tasks, edges and why, and the counts of each "
             "scope\n",
             WIDTH_DEFAULT);
      return 0;
    }
    if (!strcmp(a, "--diag")) {
      if (i + 1 >= argc)
        return usage_error("--diag: expected a folder, got nothing after it");
      return diag_main(argv[i + 1]);
    }
    if (!strcmp(a, "-o") || !strcmp(a, "--width")) {
      if (i + 1 >= argc)
        return usage_error("%s: expected a value, got nothing after it", a);
      if (a[1] == 'o') {
        out = argv[++i];
      } else {
        char *end;
        long v;
        errno = 0;
        v = strtol(argv[++i], &end, 10);
        if (errno || end == argv[i] || *end || v < WIDTH_MIN || v > WIDTH_MAX)
          return usage_error("--width: expected a number of pixels in [%d, "
                             "%d], got '%s'",
                             WIDTH_MIN, WIDTH_MAX, argv[i]);
        width = (int)v;
      }
    } else if (a[0] == '-' && a[1]) {
      return usage_error("unknown option '%s'", a);
    } else if (path) {
      return usage_error("expected one trace file, got a second, '%s'", a);
    } else {
      path = a;
    }
  }
  if (!path) {
    fputs(USAGE "\n", stderr);
    return 2;
  }
  p.src = file_read(path, &p.len);
  if (!p.src)
    return 1;
  p.line = 1;
  t.path = path;
  t.want_args = out != NULL;
  name_add(&t.names, "", 0);
  if (trace_parse(&p, &t) || trace_build(&p, &t)) {
    fprintf(stderr, "pld-trace: %s: line %u: %s\n", path, p.errline, p.err);
    goto out_free;
  }
  print_summary(&t);
  fflush(stdout);
  if (out && svg_write(&t, out, width))
    goto out_free;
  status = 0;
out_free:
  free((char *)p.src);
  free(p.nodes);
  free(p.chars.p);
  free(t.ev);
  free(t.names.text.p);
  free(t.names.off);
  free(t.names.slot);
  free(t.args.p);
  free(t.lanes);
  free(t.procs);
  free(t.spans);
  free(t.waits);
  free(t.blocks);
  return status;
}

/* Reading a YAML file into C structures through libyaml's event parser: the layer
 * under robot/planning_scene.c, internal to robot/.
 *
 * A reader is a function that gets the first event of a node and consumes the
 * node's events to its end (tdm__yaml_read_fn). Mappings are read through a table
 * of the keys the caller knows (tdm__yaml_read_map): keys may come in any order,
 * a known key twice is an error, unknown keys are skipped; checks that involve
 * several keys run in the caller once the mapping has ended, and report through
 * tdm__yaml_fail_field. Lists call an item reader per element (tdm__yaml_read_seq).
 * The event parser keeps no document tree, so memory follows what the readers
 * keep, not the file's node count.
 *
 * Ownership:
 *   - tdm__yaml_parse borrows its path, bytes, name and limits for the call and
 *     owns the parser and the file; `dst` is the caller's. The layer never frees
 *     what readers put into dst: after a failure the caller frees a half-built
 *     result, so it must be freeable at every step (tdm__yaml_grow helps: it
 *     zeroes each new element before any count covers it).
 *   - An event passed to a reader is borrowed for the call; whoever got it from
 *     tdm__yaml_next deletes it (yaml_event_delete), also after a failure (the
 *     event is then zeroed, which yaml_event_delete accepts).
 *   - Strings are new copies (malloc) that the caller frees; arrays grown by
 *     tdm__yaml_grow or filled by tdm__yaml_read_list belong to the caller after
 *     the call, whatever it returned.
 *
 * Errors: every function returns TDM_OK or a negative TDM_E* code (geom/base.h).
 * The first failure writes err (if errlen > 0) and every caller passes its code up
 * unchanged, so err holds one line about the first problem:
 *   FILE:LINE: PATH: what     an element (PATH omitted, with its ": ", at the root)
 *   FILE:LINE:COL: malformed YAML: (libyaml's words)
 *   FILE: what                the file itself (cannot open or read, too big)
 * LINE is 1-based, where the element or its key starts. PATH is the YAML path of
 * the element being read, made of known keys and list indices (`a.b[3].c`): the
 * map and list readers push and pop it around their readers; other code may push
 * more segments to name an element after the fact (tdm__yaml_push/_pop). It is cut
 * at 255 bytes. Codes: TDM_EIO (open, read), TDM_EFORMAT (malformed YAML, wrong
 * kind of node, bad scalar, a key twice, a YAML alias where a node is read, a list
 * of the wrong length), TDM_ENONFINITE (a NaN or Inf number), TDM_ERANGE (a limit),
 * TDM_ENOMEM.
 *
 * Limits (tdm__yaml_limits, the caller's, each an error naming the limit):
 * max_bytes of YAML, checked before reading a regular file and counted while
 * reading any; max_string bytes in a scalar read as a string; max_depth levels of
 * lists and mappings in a skipped element. Readers of known keys nest only as deep
 * as the caller's schema; only tdm__yaml_skip meets the file's own nesting, and
 * libyaml's stacks grow with it, hence the limit. YAML aliases are refused wherever
 * a node is read, so a small file cannot stand for a huge result.
 *
 * Threads: a parse's state lives on its caller's stack; the layer keeps no other
 * state, so any number of parses may run at once. */
#ifndef TDM_ROBOT_YAML_READ_H
#define TDM_ROBOT_YAML_READ_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "../geom/base.h"

#if defined(__GNUC__)
#define TDM__YAML_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TDM__YAML_PRINTF(f, a)
#endif

/* One parse's state: the parser, the input, the message buffer, the path. */
typedef struct tdm__yaml tdm__yaml;

/* Reads the node that `ev` starts into dst (borrowed). */
typedef int (*tdm__yaml_read_fn)(tdm__yaml *y, const yaml_event_t *ev, void *dst);
/* Reads item `index` of a list. */
typedef int (*tdm__yaml_item_fn)(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t index);

typedef struct tdm__yaml_limits {
    size_t max_bytes;             /* of YAML in one file or string */
    uint32_t max_depth;           /* levels of lists and mappings in a skipped element */
    uint32_t max_string;          /* bytes in a scalar read as a string */
    const char *max_bytes_name;   /* the limits' names, for messages ("TDM_PS_MAX_FILE_BYTES") */
    const char *max_depth_name;
    const char *max_string_name;
} tdm__yaml_limits;

/* Reads one YAML document, from the file at `path` or (path == NULL) from `len`
 * bytes at `yaml`, calling `root` with the document's first event; `name` stands
 * for the string in messages ("(string)" when NULL). err is set to "" first. */
int tdm__yaml_parse(const char *path, const char *yaml, size_t len, const char *name,
                    const tdm__yaml_limits *lim, tdm__yaml_read_fn root, void *dst, char *err, size_t errlen);

/* ---- events ---- */

/* The next event into *ev (the caller's to delete, zeroed on failure). */
int tdm__yaml_next(tdm__yaml *y, yaml_event_t *ev);
/* Consumes the rest of the node that `ev` starts (nothing for a scalar or alias). */
int tdm__yaml_skip(tdm__yaml *y, const yaml_event_t *ev);

/* The scalar's bytes (NUL-terminated by libyaml; may hold a NUL before its length). */
static inline const char *tdm__yaml_sval(const yaml_event_t *ev) { return (const char *)ev->data.scalar.value; }
/* Is `ev` the scalar s, exactly? */
int tdm__yaml_sval_is(const yaml_event_t *ev, const char *s);
/* `key:` with nothing after it, `~` or `null`, unquoted: YAML's null. */
int tdm__yaml_is_null(const yaml_event_t *ev);

/* ---- errors and the path ---- */

/* "FILE:LINE: PATH: what", LINE from `at`; returns code. */
int tdm__yaml_fail(tdm__yaml *y, const yaml_mark_t *at, int code, const char *fmt, ...) TDM__YAML_PRINTF(4, 5);
/* "expected `want`, got a list" (or a mapping, a scalar), or that aliases are refused. */
int tdm__yaml_bad_kind(tdm__yaml *y, const yaml_event_t *ev, const char *want);
/* Appends `.key`, or `[index]` when key is NULL; returns the length to pop back to. */
size_t tdm__yaml_push(tdm__yaml *y, const char *key, uint32_t index);
void tdm__yaml_pop(tdm__yaml *y, size_t mark);

/* ---- scalars: tdm__yaml_read_fn's, dst typed as said ---- */

int tdm__yaml_read_double(tdm__yaml *y, const yaml_event_t *ev, void *dst); /* double *: finite */
int tdm__yaml_read_uint(tdm__yaml *y, const yaml_event_t *ev, void *dst);   /* uint32_t *: decimal */
int tdm__yaml_read_bool(tdm__yaml *y, const yaml_event_t *ev, void *dst);   /* uint8_t *: true/false */
/* char **: a new copy of at most max_string bytes, no NUL inside; *dst must be NULL. */
int tdm__yaml_read_string(tdm__yaml *y, const yaml_event_t *ev, void *dst);

/* ---- arrays ---- */

/* Room for element n of `arr` (elements of `size` bytes), zeroed; the capacity is
 * implied by n (8, then doubling), so an array must only ever grow through here,
 * one element at a time. More than `limit` elements is TDM_ERANGE ("more than
 * LIMIT what"). Returns the array (maybe moved) or NULL with *rc set; `arr` stays
 * valid then. */
void *tdm__yaml_grow(tdm__yaml *y, const yaml_mark_t *at, void *arr, uint32_t n, size_t size, uint32_t limit,
                     const char *what, int *rc);

/* ---- mappings and lists ---- */

/* A known key of a mapping: its reader and destination; the map reader sets seen
 * and mark (where the key is) for the checks after the mapping. */
typedef struct tdm__yaml_field {
    const char *key;
    tdm__yaml_read_fn fn;
    void *dst;
    int seen;
    yaml_mark_t mark;
} tdm__yaml_field;
#define TDM__YAML_FIELD(key, fn, dst) {(key), (fn), (void *)(dst), 0, {0, 0, 0}}

/* Reads a mapping, calling each known key's reader with its value, the key pushed
 * on the path; unknown keys are skipped. A null value stands for an empty mapping. */
int tdm__yaml_read_map(tdm__yaml *y, const yaml_event_t *start, tdm__yaml_field *f, size_t nf);
/* A failure about a whole field, found after its mapping ended: the field's path
 * and the line of its key. */
int tdm__yaml_fail_field(tdm__yaml *y, const tdm__yaml_field *f, int code, const char *fmt, ...)
    TDM__YAML_PRINTF(4, 5);

/* Reads a list, calling `fn` on each item, its index pushed on the path. A null
 * value stands for an empty list. */
int tdm__yaml_read_seq(tdm__yaml *y, const yaml_event_t *start, tdm__yaml_item_fn fn, void *dst);

/* A list of strings, numbers or booleans into an array and its count. */
typedef enum tdm__yaml_list_type { TDM__YAML_STRINGS, TDM__YAML_DOUBLES, TDM__YAML_BOOLS } tdm__yaml_list_type;
typedef struct tdm__yaml_list {
    tdm__yaml_list_type type;
    void *arr;        /* char ** / double * / uint8_t *, the caller's to free (and its n strings) */
    uint32_t n;       /* elements read */
    uint32_t limit;   /* most elements */
    const char *what; /* the elements, for "more than LIMIT what" */
} tdm__yaml_list;
/* A tdm__yaml_read_fn: dst is a tdm__yaml_list, set up by the caller with arr NULL. */
int tdm__yaml_read_list(tdm__yaml *y, const yaml_event_t *ev, void *dst);

/* Exactly n scalars in a list, the i-th read by `get` into out + i * size; `what`
 * names them ("expected 3 what, got 2"). */
int tdm__yaml_read_tuple(tdm__yaml *y, const yaml_event_t *ev, uint32_t n, const char *what, tdm__yaml_read_fn get,
                         void *out, size_t size);

/* A tdm__yaml_read_fn for keys whose presence with any content is refused: null or
 * an empty list is read, anything else is "not supported: WHY", dst the const char *WHY. */
int tdm__yaml_read_empty(tdm__yaml *y, const yaml_event_t *ev, void *why);

/* The first repeated name of names[0..n) (in the list's order), reported at field f's key
 * as "KEY[i]: 'name' is named twice". Sorted: O(n log n) comparisons. */
int tdm__yaml_check_distinct(tdm__yaml *y, const tdm__yaml_field *f, char *const *names, uint32_t n);

#endif

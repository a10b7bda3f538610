/* Bytes that are not plain UTF-8 text (issue 45.4): a compiler's message
 * quoting a Latin-1 source is shown with its invalid bytes escaped (JSON
 * refuses them, and the message was lost), and a program holding a NUL
 * byte is refused, saying so, rather than cut at the NUL. */
#include "util/buf.h"
#include "util/fs.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* ESCAPED must be what kv_utf8_escaped makes of the N bytes at RAW, and
 * JSON must take it. */
static void check_escaped(const char *raw, size_t n, const char *escaped)
{
    char *got = kv_utf8_escaped(raw, n);
    assert_string_equal(got, escaped);
    json_t *j = json_string(got);
    assert_non_null(j);
    json_decref(j);
    free(got);
}

static void valid_utf8_is_kept_and_every_invalid_byte_escaped(void **state)
{
    (void)state;
    static const char plain[] =
        "plain: \xc3\xa9t\xc3\xa9 \xe2\x80\x98q\xe2\x80\x99 \xf0\x9f\x98\x80";
    check_escaped(plain, sizeof plain - 1,
                  "plain: \xc3\xa9t\xc3\xa9 \xe2\x80\x98q\xe2\x80\x99 \xf0\x9f\x98\x80");
    check_escaped("caf\xe9", 4, "caf\\xE9");                      /* Latin-1 */
    check_escaped("\x80x", 2, "\\x80x");                          /* a lone continuation */
    check_escaped("\xc0\xaf", 2, "\\xC0\\xAF");                   /* an overlong '/' */
    check_escaped("\xed\xa0\x80", 3, "\\xED\\xA0\\x80");          /* a surrogate */
    check_escaped("\xf4\x90\x80\x80", 4, "\\xF4\\x90\\x80\\x80"); /* past U+10FFFF */
    check_escaped("\xe2\x82", 2, "\\xE2\\x82");                   /* cut short */
    check_escaped("a\0b", 3, "a\\x00b");
    check_escaped("", 0, "");
    /* The escaped text is a JSON string where the raw one is not. */
    assert_null(json_string("caf\xe9"));
}

/* Writes the N bytes at DATA to a new file; returns its path (malloc'd). */
static char *temp_file(const void *data, size_t n)
{
    char *path = kv_strdup("/tmp/kv-source-bytes-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    close(fd);
    return path;
}

static void a_source_with_a_nul_byte_is_refused_naming_its_place(void **state)
{
    (void)state;
    static const char nul[] = "int kv_launch(void)\n{\n    return 0;\n}\n\0garbage\n";
    char *path = temp_file(nul, sizeof nul - 1);
    char *err = NULL;
    assert_null(kv_read_source(path, &err));
    assert_non_null(err);
    assert_non_null(strstr(err, "holds a NUL byte (byte 38, line 5)"));
    free(err);
    unlink(path);
    free(path);

    static const char latin1[] = "/* caf\xe9 */\nint x;\n";
    path = temp_file(latin1, sizeof latin1 - 1);
    err = NULL;
    char *text = kv_read_source(path, &err);
    assert_null(err);
    assert_non_null(text);
    assert_int_equal(strlen(text), sizeof latin1 - 1); /* read whole, as it is */
    free(text);
    unlink(path);
    free(path);

    err = NULL;
    assert_null(kv_read_source("/nonexistent/kv-source", &err));
    assert_non_null(strstr(err, "cannot read /nonexistent/kv-source"));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_utf8_is_kept_and_every_invalid_byte_escaped),
        cmocka_unit_test(a_source_with_a_nul_byte_is_refused_naming_its_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_parse.c - lib/featuregate/parse.c: the Set string (S1, P10).
 */
#include "cktest.h"

#include "fgtest.h"

struct pcase {
    const char *in;
    const char *err;   /* exact message, NULL: ok */
    const char *pairs; /* expected "name=1;name=0;" */
};

static void test_S1_parse_table(void **state)
{
    (void)state;
    const struct pcase cases[] = {
        {"", NULL, ""},
        {",,", NULL, ""},
        {",A=true,", NULL, "A=1;"},
        {" A = true , B=false", NULL, "A=1;B=0;"},
        {"A=1,B=t,C=T,D=TRUE,E=True,F=0,G=f,H=F,I=FALSE,J=False", NULL,
         "A=1;B=1;C=1;D=1;E=1;F=0;G=0;H=0;I=0;J=0;"},
        {"A=true,A=false", NULL, "A=1;A=0;"}, /* applied in order: last wins */
        {"=true", NULL, "=1;"},
        {"A=true, ", "missing bool value for ", NULL},
        {"A", "missing bool value for A", NULL},
        {"A=yes", "invalid value of A=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax",
         NULL},
        {"A=", "invalid value of A=, err: strconv.ParseBool: parsing \"\": invalid syntax", NULL},
        {"A==true",
         "invalid value of A==true, err: strconv.ParseBool: parsing \"=true\": invalid syntax",
         NULL},
        {"A=tRuE",
         "invalid value of A=tRuE, err: strconv.ParseBool: parsing \"tRuE\": invalid "
         "syntax",
         NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_fg_pair *p = NULL;
        size_t n = 0;
        char *buf = NULL;
        struct ck_fg_err err = {0};
        int rc = ck_fg_parse_pairs(cases[i].in, &p, &n, &buf, &err);
        if (cases[i].err) {
            if (rc == 0 || strcmp(err.msg, cases[i].err) != 0)
                fail_msg("'%s': rc %d msg '%s'", cases[i].in, rc, err.msg);
            continue;
        }
        if (rc != 0)
            fail_msg("'%s': %s", cases[i].in, err.msg);
        char got[256] = "";
        for (size_t k = 0; k < n; k++)
            snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s=%d;", p[k].name, p[k].value);
        assert_string_equal(got, cases[i].pairs);
        free(p);
        free(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_S1_parse_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

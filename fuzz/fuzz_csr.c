/*
 * fuzz_csr.c - libFuzzer target for the readers of certificates.k8s.io's
 * PEM input: ck_csr_parse() (a request's first PEM block, then GnuTLS) and
 * ck_certificate_pem_check() (status.certificate's PEM blocks).
 *
 * Any input must parse or fail cleanly; a parsed request has a common name
 * (maybe empty) and as many organizations as it says.
 */
#include <stdint.h>
#include <stdlib.h>

#include "ckube/certificates.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ck_csr *csr = NULL;
    struct ck_err err = {0};
    if (ck_csr_parse(data, size, &csr, &err) == 0) {
        if (!csr || !csr->common_name || (csr->n_organizations && !csr->organizations))
            abort();
        for (size_t i = 0; i < csr->n_organizations; i++)
            if (!csr->organizations[i])
                abort();
    }
    ck_csr_free(csr);
    struct ck_err cerr = {0};
    (void)ck_certificate_pem_check(data, size, &cerr);
    return 0;
}

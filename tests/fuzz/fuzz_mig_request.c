/* fuzz_mig_request.c - libFuzzer harness for the MIG request parser and the geometry planner
 * behind it: any input gets a request or an error that says why, never a crash; an accepted
 * request keeps the parser's promises, and the requests of a whitespace-separated input, on
 * every model carve knows, always plan into a valid layout with every request placed or
 * refused with a reason (one model per input, chosen by its length, to keep runs fast). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mig_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void check_one(const char *s, struct mig_request *r)
{
    char err[300] = "";
    if (mig_request_parse(s, r, err, sizeof(err)) != 0) {
        if (!err[0])
            abort(); /* every refusal says why */
        r->text[0] = '\0';
        return;
    }
    if (strcmp(r->text, s) != 0)
        abort();
    if (r->profile[0] && (r->memory_mib || r->compute_pct))
        abort(); /* a profile by name is not also memory or a share */
    if (!r->profile[0] && !r->memory_mib && !(r->compute_pct > 0))
        abort(); /* nor is any request empty */
    if (r->compute_pct < 0 || r->compute_pct > 100)
        abort();
}

static void plan_all(const struct mig_request *req, size_t n, size_t which)
{
    size_t nmodels;
    const struct mig_model *models = mig_models(&nmodels);
    for (size_t m = which % nmodels; m == which % nmodels; m++) {
        struct mig_plan p;
        char err[256];
        if (mig_plan(&models[m], req, n, NULL, 0, &p, err, sizeof(err)) != 0)
            abort();
        if (p.nplaced + p.nrefused != n)
            abort();
        struct mig_instance inst[MIG_MAX_INSTANCES];
        for (size_t i = 0; i < p.nplaced; i++) {
            inst[i] = p.placed[i].inst;
            if (!mig_request_fits(&models[m], &req[p.placed[i].request], inst[i].profile))
                abort();
        }
        if (!mig_layout_valid(&models[m], inst, p.nplaced, NULL, 0))
            abort();
        for (size_t i = 0; i < p.nrefused; i++)
            if (!p.refused[i].why[0])
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len > 512)
        return 0;
    char *s = strndup((const char *)data, len); /* the parsers read C strings */
    if (!s)
        return 0;
    struct mig_request one, req[8];
    check_one(s, &one);
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(s, " \t\n", &save); tok && n < 8;
         tok = strtok_r(NULL, " \t\n", &save)) {
        check_one(tok, &req[n]);
        if (req[n].text[0])
            n++;
    }
    if (n)
        plan_all(req, n, len);
    free(s);
    return 0;
}

/* fleet_report.h - showing a fleet plan: table, terminal picture, SVG, JSON. */
#ifndef CARVE_FLEET_REPORT_H
#define CARVE_FLEET_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "fleet.h"

/* "H100-80GB (81559 MiB, MIG) x 100 at $2.49/h, ..." */
void fleet_report_fleet(FILE *out, const struct fleet *f);
/* The side-by-side table, the notes, and the workloads that cannot run. */
void fleet_report_text(FILE *out, const struct fleet *f, const struct fleet_workloads *ws,
                       const struct fleet_result *r);
/* Bars of GPUs needed and a memory-fill strip of the first width GPUs of each plan. */
void fleet_report_picture(FILE *out, const struct fleet *f, const struct fleet_result *r,
                          unsigned width);
/* Needs the plans' gpu_of (fleet_options.keep_assignment). 0, or -1 on out of memory. */
int fleet_report_svg(FILE *out, const struct fleet *f, const struct fleet_workloads *ws,
                     const struct fleet_result *r, unsigned max_gpus);
/* A new reference; assignment adds each plan's workload -> GPU list (needs gpu_of). */
json_t *fleet_report_json(const struct fleet *f, const struct fleet_workloads *ws,
                          const struct fleet_result *r, bool assignment);

/* The same JSON with each plan's assignment, written as it goes: 100,000 workloads x 5 plans
   would otherwise build half a million JSON objects first. 0, or -1. */
int fleet_report_json_stream(FILE *out, const struct fleet *f, const struct fleet_workloads *ws,
                             const struct fleet_result *r);

#endif

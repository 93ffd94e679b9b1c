/* A batch's plan, for the batch's life (batch.c): built for a description, and built, reused
 * or taken from the kept plans and run at a submit (batch_plan.c). */
#ifndef OMPBATCH_PLUGIN_API_BATCH_PLAN_H
#define OMPBATCH_PLUGIN_API_BATCH_PLAN_H

#include "ompbatch.h"

/* The plan of the added copies, as the batch's current plan. */
int ob_batch_build_plan(ompbatch_batch *batch);

/* A submit's plan -- the current one for the very same copies, a kept one for copies that
 * come back, else a new one -- enqueued on the batch's stream. */
int ob_batch_plan_and_run(ompbatch_batch *batch);

#endif

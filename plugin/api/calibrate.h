/* Measuring a device's cost model: each lane's pieces timed directly and staged through the
 * library's own batches with the strategy forced. */
#ifndef OMPBATCH_PLUGIN_CALIBRATE_H
#define OMPBATCH_PLUGIN_CALIBRATE_H

#include "plugin/plan/cost.h"

/* Measures the model on CUDA device `ordinal` (about half a second on an H200); the device's
 * context is current. */
int ob_cost_calibrate(int ordinal, ob_cost_model *model);

#endif

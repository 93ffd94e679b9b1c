/* Each CUDA device's cost model, built once: read from the calibration cache, measured
 * (calibrate.h) or the built-in figures, then OMPBATCH_COST's overrides (cost.h holds the
 * model as data and its arithmetic). */
#ifndef OMPBATCH_PLUGIN_COST_MODELS_H
#define OMPBATCH_PLUGIN_COST_MODELS_H

#include "plugin/plan/cost.h"

/* The model for CUDA device `ordinal`, built on first use: calibrated (or read from the cache)
 * unless OMPBATCH_CALIBRATE=0, then overridden by OMPBATCH_COST. The device's context must be
 * current. Never NULL: when calibration fails the built-in model is used and the verbose log
 * says why. */
const ob_cost_model *ob_cost_model_for(int ordinal);

/* Forgets every device's model (tests that change the environment). Not thread-safe. */
void ob_cost_reset_for_testing(void);

#endif

/* The cost model that picks between the direct and the staged strategy. For each lane (a
 * direction and host memory kind) and strategy it holds what a group of pieces costs: a fixed
 * part per submit, and a cost per piece measured at a few piece sizes (interpolated between
 * them, proportional to size beyond the largest). The figures are measured on the running GPU
 * by a short calibration on first use and cached per device model and driver version
 * (calibrate.c); OMPBATCH_CALIBRATE=0 uses the built-in H200 figures, and OMPBATCH_COST
 * overrides single figures. */
#ifndef OMPBATCH_PLUGIN_COST_H
#define OMPBATCH_PLUGIN_COST_H

#include <stddef.h>

#include "plugin/plan/copy.h"

typedef enum ob_lane {
    OB_LANE_H2D_PAGEABLE = 0,
    OB_LANE_H2D_PINNED,
    OB_LANE_D2H_PAGEABLE,
    OB_LANE_D2H_PINNED,
    OB_LANE_D2D,
    OB_LANE_COUNT,
    OB_LANE_NONE = OB_LANE_COUNT /* categories the staged strategy does not take */
} ob_lane;

typedef enum ob_way { OB_WAY_DIRECT = 0, OB_WAY_STAGED, OB_WAY_COUNT } ob_way;

/* Piece sizes the calibration measures at. */
#define OB_COST_SIZES 5
extern const size_t ob_cost_sizes[OB_COST_SIZES];

typedef struct ob_cost_curve {
    double fixed_us;                   /* per group and submit */
    double piece_us[OB_COST_SIZES];    /* per piece of ob_cost_sizes[k] bytes */
} ob_cost_curve;

typedef struct ob_cost_model {
    ob_cost_curve curve[OB_LANE_COUNT][OB_WAY_COUNT];
    char source[160];                  /* "built-in", "calibrated ...", "cache PATH" */
} ob_cost_model;

ob_lane ob_cost_lane(ob_category category);
const char *ob_lane_name(ob_lane lane);
const char *ob_way_name(ob_way way);

/* The built-in model: the H200's figures (docs/strategies.md, "Auto and the cost model"). */
void ob_cost_builtin(ob_cost_model *model);

/* Applies OMPBATCH_COST ("lane.way.fixed=US,lane.way.SIZE=US,..."; lane as ob_lane_name,
 * way direct|staged, SIZE one of ob_cost_sizes). Returns the number of overrides applied,
 * or -1 with why the bad entry is one in why (nothing is applied then). A bad variable is a
 * warning for the caller to print, not an error of the call that builds a model. */
int ob_cost_apply_overrides(ob_cost_model *model, const char *text, char *why, size_t why_size);

/* Predicted microseconds for one piece of `bytes` on a curve (without the fixed part). */
double ob_cost_piece(const ob_cost_curve *curve, size_t bytes);

/* Writes the model as text (the cache file's format) / reads it back. Reading returns
 * OMPBATCH_OK only for a complete, well-formed model. */
int ob_cost_write(const ob_cost_model *model, const char *path);
int ob_cost_read(ob_cost_model *model, const char *path);

#endif

/* The routing decision table: which path a group of device copies takes. Every threshold
 * lives here, next to the measurement it comes from. */
#ifndef OMPBATCH_PLUGIN_ROUTE_H
#define OMPBATCH_PLUGIN_ROUTE_H

#include <stddef.h>

#include "plugin/plan/copy.h"
#include "ompbatch.h"

/* The category of a classified copy. */
ob_category ob_route_category(const ob_copy *copy);

/* The route for `count` copies of one category in one dependency level, `bytes` in all. */
ob_route ob_route_choose(ob_category category, size_t count, size_t bytes,
                         ompbatch_batch_form form, int disabled);

const char *ob_category_name(ob_category category);
const char *ob_route_name(ob_route route);
const char *ob_stage_how_name(ob_stage_how how);

#endif

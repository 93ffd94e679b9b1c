/* Peer access between CUDA devices, asked for once per ordered pair and remembered in the
 * device's slot (driver.h). */
#ifndef OMPBATCH_PLUGIN_PEERS_H
#define OMPBATCH_PLUGIN_PEERS_H

#include "plugin/cuda/driver.h"

/* Lets device `from` (its context current) reach device `to`'s memory, the first time the
 * pair is asked for. Where the hardware cannot, the driver stages such copies through the
 * host, so nothing fails here; the verbose log says which it was. */
void ob_peers_enable(const ob_driver *driver, int from, int to);

/* Forgets what was asked (tests that count the driver's calls). */
void ob_peers_forget_for_testing(void);

#endif

/* Short names of the zone states, for tables of transitions in the zone tests. */
#ifndef TESTS_UNIT_ZONE_STATES_H
#define TESTS_UNIT_ZONE_STATES_H

#include "zns/zone.h"

#define E ZONE_EMPTY
#define IO ZONE_IMPLICIT_OPEN
#define EO ZONE_EXPLICIT_OPEN
#define C ZONE_CLOSED
#define F ZONE_FULL
#define RO ZONE_READ_ONLY
#define OFF ZONE_OFFLINE

#endif

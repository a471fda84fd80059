/* Unit tests of the completion deadline heap. SPDX-License-Identifier: GPL-2.0-or-later */
#include <glib.h>
#include "sched/deadline-heap.h"

typedef struct Item {
    uint64_t deadline;
    int id;
    size_t pos;
} Item;

static void test_pops_in_deadline_order(void)
{
    DeadlineHeap h;
    Item items[6] = { { 50, 0 }, { 10, 1 }, { 30, 2 }, { 20, 3 }, { 40, 4 }, { 0, 5 } };
    int expect[] = { 5, 1, 3, 2, 4, 0 };

    deadline_heap_init(&h);
    for (int i = 0; i < 6; i++) {
        deadline_heap_push(&h, items[i].deadline, &items[i], &items[i].pos);
    }
    g_assert_cmpuint(deadline_heap_min(&h), ==, 0);
    for (int i = 0; i < 6; i++) {
        Item *it = deadline_heap_pop_due(&h, UINT64_MAX);
        g_assert_nonnull(it);
        g_assert_cmpint(it->id, ==, expect[i]);
        g_assert_cmpuint(it->pos, ==, DEADLINE_HEAP_NOT_QUEUED);
    }
    g_assert_true(deadline_heap_empty(&h));
    deadline_heap_destroy(&h);
}

static void test_equal_deadlines_are_fifo(void)
{
    DeadlineHeap h;
    Item items[100];

    deadline_heap_init(&h);
    for (int i = 0; i < 100; i++) {
        items[i] = (Item){ 7, i };
        deadline_heap_push(&h, 7, &items[i], &items[i].pos);
    }
    for (int i = 0; i < 100; i++) {
        Item *it = deadline_heap_pop_due(&h, 7);
        g_assert_cmpint(it->id, ==, i);
    }
    deadline_heap_destroy(&h);
}

static void test_not_due_stays(void)
{
    DeadlineHeap h;
    Item a = { 100, 0 };

    deadline_heap_init(&h);
    deadline_heap_push(&h, 100, &a, &a.pos);
    g_assert_null(deadline_heap_pop_due(&h, 99));
    g_assert_cmpuint(deadline_heap_len(&h), ==, 1);
    g_assert_true(deadline_heap_pop_due(&h, 100) == &a);
    deadline_heap_destroy(&h);
}

/* Random pushes, removals and pops against a sorted reference. */
static void test_random_against_reference(void)
{
    enum { N = 2000 };
    static Item items[N];
    bool queued[N] = { 0 };
    GRand *rnd = g_rand_new_with_seed(42);
    DeadlineHeap h;
    uint64_t now = 0;

    deadline_heap_init(&h);
    for (int i = 0; i < N; i++) {
        items[i] = (Item){ now + g_rand_int_range(rnd, 0, 1000), i, DEADLINE_HEAP_NOT_QUEUED };
        deadline_heap_push(&h, items[i].deadline, &items[i], &items[i].pos);
        queued[i] = true;
        if (g_rand_int_range(rnd, 0, 4) == 0) {
            int victim = g_rand_int_range(rnd, 0, i + 1);
            bool removed = deadline_heap_remove(&h, &items[victim].pos);
            g_assert_true(removed == queued[victim]);
            queued[victim] = false;
        }
        if (g_rand_int_range(rnd, 0, 3) == 0) {
            now += g_rand_int_range(rnd, 0, 300);
            Item *it;
            uint64_t last = 0;
            while ((it = deadline_heap_pop_due(&h, now))) {
                g_assert_true(queued[it->id]);
                g_assert_cmpuint(it->deadline, <=, now);
                g_assert_cmpuint(it->deadline, >=, last);
                last = it->deadline;
                queued[it->id] = false;
            }
            /* nothing left behind is due */
            g_assert_true(deadline_heap_empty(&h) || deadline_heap_min(&h) > now);
        }
    }
    size_t left = 0;
    for (int i = 0; i < N; i++) {
        left += queued[i];
    }
    g_assert_cmpuint(left, ==, deadline_heap_len(&h));
    deadline_heap_destroy(&h);
    g_rand_free(rnd);
}

static void test_remove_twice_fails(void)
{
    DeadlineHeap h;
    Item a = { 5, 0 }, b = { 6, 1 };

    deadline_heap_init(&h);
    deadline_heap_push(&h, 5, &a, &a.pos);
    deadline_heap_push(&h, 6, &b, &b.pos);
    g_assert_true(deadline_heap_remove(&h, &a.pos));
    g_assert_false(deadline_heap_remove(&h, &a.pos));
    g_assert_true(deadline_heap_pop_due(&h, 100) == &b);
    deadline_heap_destroy(&h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/deadline-heap/order", test_pops_in_deadline_order);
    g_test_add_func("/deadline-heap/fifo-ties", test_equal_deadlines_are_fifo);
    g_test_add_func("/deadline-heap/not-due", test_not_due_stays);
    g_test_add_func("/deadline-heap/random", test_random_against_reference);
    g_test_add_func("/deadline-heap/remove-twice", test_remove_twice_fails);
    return g_test_run();
}

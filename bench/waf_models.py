#!/usr/bin/env python3
"""Write amplification of page-level FTL garbage-collection victim policies under uniform
random single-page (4 KiB) overwrites of a full drive, in steady state, from the published
analytic models. Standard library only.

Definitions (the same in every function):

    U      user (exposed) pages; T physical pages
    op     over-provisioning, (T - U) / U: op_pcent=7 is op=0.07, T = 1.07 U
    alpha  T / U = 1 + op
    rho    U / T = 1 / alpha (the fraction of physical pages holding valid data)
    b      pages per erase unit, the unit GC reclaims (in FEMU's FTL a line: one block on
           every plane of every chip, 4096 pages with the default geometry). b=None is the
           limit b -> infinity.
    WAF    NAND pages programmed / host pages written = 1 / (1 - u), u the mean fraction of
           a victim's pages still valid when it is collected (those are copied, the rest
           of the unit takes host writes).

Every model is for a drive of many units (the number of units N -> infinity, the
mean-field or fluid limit): the one open unit and any free units are a negligible part of
T. A real drive that keeps R units free in steady state has only T - R*b pages that age
with data, so compare it with the op computed from those. Finite N raises greedy's WAF a
little (in the simulation of tests/unit/test_waf_models.py about 1 % at N = 64 units,
0.5 % at 128 to 256; Bux & Iliadis 2010 show it falls to a lower bound as N grows).

Policies and their sources:

    waf_random            victim uniform among full units: WAF = (1 + op) / op, any b
                          (the d = 1 case of Van Houdt's d-choices model).
    waf_fifo              oldest unit first (FIFO, called LRU or LRW by Desnoyers): the
                          fixed point u = exp(-alpha (1 - u)) (Desnoyers, SYSTOR 2012,
                          Eq. 4; Xiang & Kurkoski 2012 obtain the same for greedy's
                          large-b limit). Independent of b.
    waf_greedy            fewest valid pages first, Desnoyers' closed form for finite b
                          (SYSTOR 2012, Eq. 12); b=None gives Eq. 4.
    waf_greedy_meanfield  fewest valid pages first, the exact N -> infinity fixed point
                          for finite b (victims at one of two successive valid counts, as
                          in Bux & Iliadis 2010's large-system model; the d -> infinity
                          limit of Van Houdt 2013's model); solved here.
    waf_d_choices         best of d units drawn at random (Van Houdt, SIGMETRICS 2013):
                          the mean-field fixed point, solved here.

Not here: windowed greedy (Hu et al., SYSTOR 2009) and cost-benefit under uniform traffic:
no published closed form or fixed point for them was found to implement.

Run directly for a table of OP 5..40 % by policy: bench/waf_models.py [--b PAGES]
"""

import argparse
import math

__all__ = ["waf_random", "waf_fifo", "waf_greedy", "waf_greedy_meanfield",
           "waf_d_choices", "table"]

EULER_GAMMA = 0.5772156649015329

# waf_d_choices solves the level-by-level fixed point exactly up to this b (cost ~ b);
# above it, the fluid limit plus its 1/b correction measured at this b.
D_CHOICES_EXACT_MAX_B = 1024


def _check_op(op):
    if not (isinstance(op, (int, float)) and math.isfinite(op) and op > 0):
        raise ValueError("op must be a finite number > 0 (op_pcent / 100), got %r" % (op,))
    return float(op)


def _check_b(b):
    """None or math.inf: the b -> infinity limit; else an integer >= 1."""
    if b is None or b == math.inf:
        return None
    if isinstance(b, float) and b.is_integer():
        b = int(b)
    if not isinstance(b, int) or isinstance(b, bool) or b < 1:
        raise ValueError("b (pages per erase unit) must be an integer >= 1 or None, got %r"
                         % (b,))
    return b


def _fifo_invalid_fraction(alpha):
    """The non-trivial root d in (0, 1) of ln(1 - d) + alpha d = 0, i.e. 1 - u for the
    fixed point u = exp(-alpha (1 - u)). Solved for d = 1 - u, not u, so that a tiny op
    (u close to 1) keeps its digits."""
    # ln(1-d) + alpha d is > 0 at d = 1 - 1/alpha (its maximum) and -> -inf at d -> 1;
    # the other root, d = 0, is the trivial one.
    lo, hi = 1.0 - 1.0 / alpha, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if math.log1p(-mid) + alpha * mid > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def waf_random(op, b=None):
    """Victim drawn uniformly among the full units.

    The victim is a uniform sample of the full units, so its expected valid count is the
    drive's average, rho * b, whatever b: u = rho and WAF = 1 / (1 - rho) = (1 + op) / op.
    This is the d = 1 case of Van Houdt's mean-field model (SIGMETRICS 2013, "A mean field
    model for a class of garbage collection algorithms in flash-based solid state
    drives"); waf_d_choices(op, 1, b) solves that model numerically and gives the same.
    b is accepted for a uniform signature and does not matter."""
    op = _check_op(op)
    _check_b(b)
    return (1.0 + op) / op


def waf_fifo(op, b=None):
    """Oldest full unit first (FIFO; Desnoyers calls it LRU, later LRW).

    Every unit waits the same number of host writes between being written and being
    collected, so a page survives to collection with one probability u for all pages.
    During that wait the drive takes T (1 - u) host writes (one cycle of the queue), each
    overwriting a given user page with probability 1/U, so u = exp(-alpha (1 - u)).
    WAF = 1 / (1 - u), which in Lambert-W form is alpha / (alpha + W0(-alpha e^-alpha)):
    Desnoyers, "Analytic modeling of SSD write performance", SYSTOR 2012, Eq. 4 (journal
    version: "Analytic models of SSD write performance", ACM TOS 2014). Xiang & Kurkoski
    2012 ("An improved analytic expression for write amplification in NAND flash") give
    the same expression for greedy, which is its large-b limit.

    Does not depend on b in the many-units limit (each page's survival is independent of
    its unit's other pages); b is accepted and ignored."""
    op = _check_op(op)
    _check_b(b)
    return 1.0 / _fifo_invalid_fraction(1.0 + op)


def waf_greedy(op, b=None):
    """Fewest valid pages first: Desnoyers' closed form.

    Desnoyers (SYSTOR 2012, Eq. 12) corrects the FIFO fixed point for
    finite b: with k = 1 + 1/(2b), WAF_greedy(alpha, b) = WAF_fifo(k alpha) / k, or in his
    Lambert-W form b / (b + 1/2 + (b / alpha) W0(-k alpha e^(-k alpha))). (The 1/(2b) is
    what replacing the harmonic sum over the valid counts a unit passes through by a
    logarithm gives; the equation is taken from the author's scripts as ported by Y. Oh,
    the paper's text was not at hand.) b=None (k = 1) is the FIFO value, greedy's large-b
    limit.

    Against waf_greedy_meanfield (the fixed point without that approximation), for op
    5..40 %, it is at most 4 % lower at b = 16, 1.3 % at b = 32, 0.15 % at b = 64 and
    0.03 % from b = 256 on. At large op and small b (op = 4, b = 64, say) it dips below 1,
    where the exact answer is 1 (an empty unit is always there to collect): clamped at 1."""
    op = _check_op(op)
    b = _check_b(b)
    if b is None:
        return waf_fifo(op)
    k = 1.0 + 1.0 / (2.0 * b)
    return max(1.0, (1.0 / _fifo_invalid_fraction(k * (1.0 + op))) / k)


def _harmonic(n):
    """H_n = 1 + 1/2 + ... + 1/n; the asymptotic series past 64 (error < 1e-16)."""
    if n < 64:
        return math.fsum(1.0 / i for i in range(1, n + 1))
    n2 = 1.0 / (n * n)
    return (math.log(n) + EULER_GAMMA + 0.5 / n
            - n2 * (1.0 / 12 - n2 * (1.0 / 120 - n2 / 252)))


def _greedy_levels(rho, b):
    """The N -> infinity fixed point of greedy for integer b: (k, n_k, r).

    Time in units of N host writes: units enter full (b valid pages) at rate 1 / (b - v),
    v the mean victim count, and a unit at count i drops to i - 1 at rate i / (rho b), so
    at each count it passes through the fraction of units is r / i, r = rho b / (b - v).
    Greedy collects at a floor level k: above it the fraction at count i is r / i, at k
    it is n_k in [0, r / k], below it nothing (a unit that reaches k - 1 is collected at
    once). Victims hold k (probability 1 - k n_k / r) or k - 1 valid pages, the 'two
    successive values' of Bux & Iliadis 2010. The fractions sum to 1 and the valid pages
    to rho b; those two equations give r and n_k for each k, and k is the one whose n_k
    falls in range."""
    hb = _harmonic(b)

    def flow(k):
        # r from the page count with n_k eliminated through the unit count
        return (rho * b - k) / ((b - k) - k * (hb - _harmonic(k)))

    def above(k):
        # fraction of units strictly above level k
        return flow(k) * (hb - _harmonic(k))

    # k < rho b (a victim holds fewer valid pages than the average unit); the mass above
    # k falls as k rises, so bisect for the lowest k that leaves n_k >= 0
    lo, hi = 0, max(0, math.ceil(rho * b) - 1)
    while lo < hi:
        mid = (lo + hi) // 2
        if above(mid) <= 1.0:
            hi = mid
        else:
            lo = mid + 1
    k = lo
    r = flow(k)
    n_k = 1.0 - above(k)
    tol = 1e-9
    if not (n_k >= -tol and (k == 0 or n_k <= r / k + tol)):
        raise ArithmeticError("greedy fixed point not bracketed (rho=%r b=%r k=%d)"
                              % (rho, b, k))
    return k, n_k, r


def waf_greedy_meanfield(op, b=None):
    """Fewest valid pages first: the exact many-units (N -> infinity) fixed point.

    Solves, for integer b, the flow balance of greedy in a drive of many units (see
    _greedy_levels). Its victims hold one of two successive valid counts, the picture of
    the large-system model of Bux & Iliadis, "Performance of greedy garbage collection in
    flash-based solid-state drives", Performance Evaluation 2010; it is also the
    d -> infinity limit of Van Houdt's d-choices model. WAF = r / rho. It rises with b
    towards the FIFO value, which is the b=None result.

    O(log b) with harmonic numbers from their asymptotic series: fast for any b."""
    op = _check_op(op)
    b = _check_b(b)
    if b is None:
        return waf_fifo(op)
    rho = 1.0 / (1.0 + op)
    return _greedy_levels(rho, b)[2] / rho


def _d_choices_finite(rho, d, b):
    """Mean-field fixed point of d-choices for integer b: WAF.

    With x_i the fraction of units holding i valid pages and S_i = x_i + ... + x_b, and
    time in units of N host writes: a unit at count i drops to i - 1 at rate i / (rho b);
    victims are taken at rate 1 / (b - v), v the mean victim count, and hold i valid pages
    with probability S_i^d - S_(i+1)^d (the fewest of d uniform draws); each re-enters
    full. With r = rho b / (b - v), balancing the flow across each level gives
    S_i = S_(i+1) + (r / i) (1 - S_i^d), S_(b+1) = 0, solved from the top down; r is the
    root of r (b - sum_i S_i^d) = rho b (the valid pages add up to rho b). WAF = r / rho.
    d = 1 gives 1 / (1 - rho) for every b."""

    def victim_mean(r):
        s, total = 0.0, 0.0
        for i in range(b, 0, -1):
            c = r / i
            rhs = s + c
            # x + c x^d = rhs: increasing and convex in x, so Newton from above the root
            # (min(1, rhs) is) falls monotonically onto it
            x = min(1.0, rhs)
            for _ in range(100):
                xd = x ** d
                h = x + c * xd - rhs
                if h <= 1e-16:
                    break
                x -= h / (1.0 + c * d * xd / x)
            s = x
            total += s ** d
        return total

    def excess(r):
        return r * (b - victim_mean(r)) - rho * b

    # WAF lies between 1 (r = rho) and random's 1 / (1 - rho), the d = 1 case: bracket
    # with room above it, the root of d = 1 being right at that bound
    lo, hi = rho, 2.0 * rho / (1.0 - rho)
    if not (excess(lo) < 0 < excess(hi)):
        raise ArithmeticError("d-choices fixed point not bracketed (rho=%r d=%r b=%r)"
                              % (rho, d, b))
    while hi - lo > 1e-13 * hi:
        mid = 0.5 * (lo + hi)
        if excess(mid) > 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi) / rho


def _d_choices_limit(rho, d, steps=2000):
    """The b -> infinity (fluid) limit of the d-choices fixed point: WAF.

    With valid fractions instead of counts the level recursion becomes, in t = -ln(valid
    fraction), dS/dt = r (1 - S^d), S(0) = 0, and the mean victim fraction is
    u = integral_0^inf S(t)^d e^-t dt with r = rho / (1 - u). Written with s = S as the
    variable, u = integral_0^1 d s^(d-1) exp(-G(s)/r) ds, G(s) = integral_0^s dv/(1-v^d);
    integrated on y = -ln(1 - s), where both integrands are smooth, by Simpson's rule.
    d = 1 gives u = rho (random); d -> infinity gives FIFO's fixed point."""
    y_max = math.log(d) + 45.0  # the weight below is ~ e^-y past its peak at ln d
    h = y_max / steps

    def g_rate(y):
        # dG/dy = e^-y / (1 - (1 - e^-y)^d), -> 1 at y = 0
        if y == 0.0:
            return 1.0
        e = math.exp(-y)
        return e / -math.expm1(d * math.log1p(-e))

    g = [0.0] * (steps + 1)
    for i in range(1, steps + 1):
        y0, y1 = (i - 1) * h, i * h
        mid = g_rate(0.5 * (y0 + y1))
        g[i] = g[i - 1] + h / 6.0 * (g_rate(y0) + 4.0 * mid + g_rate(y1))
    weight = []
    for i in range(steps + 1):
        y = i * h
        e = math.exp(-y)
        # d s^(d-1) ds with s = 1 - e^-y, ds = e^-y dy; Simpson's 1-4-2-...-4-1 folded in
        w = d * e * (math.exp((d - 1) * math.log1p(-e)) if y > 0 else float(d == 1))
        simpson = 1.0 if i in (0, steps) else (4.0 if i % 2 else 2.0)
        weight.append(w * simpson * h / 3.0)

    def invalid_fraction(r):
        # 1 - u, integrated directly so that a small op (u close to 1) keeps its digits
        return math.fsum(w * -math.expm1(-gi / r) for w, gi in zip(weight, g) if w > 0.0)

    # d-choices does no worse than random, so 1 - u lies in [1 - rho, 1]; on it
    # (1 - u) - invalid_fraction(rho / (1 - u)) goes from <= 0 to >= 0
    lo, hi = 1.0 - rho, 1.0
    while hi - lo > 1e-13 * lo:
        delta = 0.5 * (lo + hi)
        if delta - invalid_fraction(rho / delta) > 0:
            hi = delta
        else:
            lo = delta
    return 2.0 / (lo + hi)


def waf_d_choices(op, d, b=None):
    """Best of d units drawn uniformly at random (fewest valid pages among them).

    Van Houdt, "A mean field model for a class of garbage collection algorithms in
    flash-based solid state drives", SIGMETRICS 2013: the fixed point of the mean-field
    model (the fraction of units at each valid count), re-derived from the model's flow
    balance and solved here (see _d_choices_finite; the paper's own text was not
    available to compare its numerical method). d = 1 is random; d -> infinity (pass
    math.inf) is greedy, given by waf_greedy_meanfield.

    b <= 1024: the exact level-by-level fixed point (a few hundredths of a second).
    Larger b (and b=None): the b -> infinity fluid limit (_d_choices_limit), plus, for
    finite b, the 1/b correction measured at b = 1024:
    WAF(b) ~ WAF_inf + (WAF(1024) - WAF_inf) 1024 / b. Against the exact fixed point at
    b = 2048 and 4096 that is within 3e-5 for op >= 5 %, 6e-4 at op = 1 %; it needs
    b op >> 1, and is off by 3 % at op = 0.1 %."""
    op = _check_op(op)
    b = _check_b(b)
    if d == math.inf:
        return waf_greedy_meanfield(op, b)
    if isinstance(d, float) and d.is_integer():
        d = int(d)
    if not isinstance(d, int) or isinstance(d, bool) or d < 1:
        raise ValueError("d must be an integer >= 1 or math.inf, got %r" % (d,))
    rho = 1.0 / (1.0 + op)
    if b is not None and b <= D_CHOICES_EXACT_MAX_B:
        return _d_choices_finite(rho, d, b)
    limit = _d_choices_limit(rho, d)
    if b is None:
        return limit
    ref = D_CHOICES_EXACT_MAX_B
    return limit + (_d_choices_finite(rho, d, ref) - limit) * ref / b


def table(op_pcents=(5, 7, 10, 15, 20, 28, 40), b=4096):
    """The WAF of each policy for each op_pcent, as printable lines."""
    cols = [
        ("random", lambda op: waf_random(op)),
        ("fifo", lambda op: waf_fifo(op)),
        ("2-choice", lambda op: waf_d_choices(op, 2, b)),
        ("10-choice", lambda op: waf_d_choices(op, 10, b)),
        ("greedy", lambda op: waf_greedy_meanfield(op, b)),
        ("greedy Eq12", lambda op: waf_greedy(op, b)),
        ("greedy b=inf", lambda op: waf_greedy(op)),
    ]
    width = max(len(name) for name, _ in cols) + 1
    lines = ["WAF under uniform random 4 KiB overwrites, steady state, b = %s pages per "
             "erase unit" % ("inf" if b is None else b),
             "OP %".rjust(5) + "".join(name.rjust(width) for name, _ in cols)]
    for pc in op_pcents:
        op = pc / 100.0
        lines.append(("%g" % pc).rjust(5) + "".join(("%.3f" % f(op)).rjust(width)
                                                    for _, f in cols))
    lines.append("greedy: many-units fixed point; greedy Eq12: Desnoyers' closed form; "
                 "greedy b=inf = fifo.")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--b", type=int, default=4096,
                    help="pages per erase unit (FEMU's default line: 64 pages x 1 plane x "
                         "8 LUNs x 8 channels = 4096)")
    ap.add_argument("--op", type=str, default="5,7,10,15,20,28,40",
                    help="comma-separated op_pcent values")
    a = ap.parse_args()
    print("\n".join(table(tuple(float(x) for x in a.op.split(",")), _check_b(a.b))))


if __name__ == "__main__":
    main()

"""Job implementations. Each takes the list of string arguments from a job line."""
import math


def job_sum(args):
    return sum(int(a) for a in args)


def job_fact(args):
    (n,) = args
    return math.factorial(int(n))


def job_div(args):
    a, b = args
    return int(a) // int(b)


def job_upper(args):
    return " ".join(args).upper()


JOBS = {"sum": job_sum, "fact": job_fact, "div": job_div, "upper": job_upper}


def run(line):
    name, *args = line.split()
    if name not in JOBS:
        raise KeyError(name)
    return JOBS[name](args)

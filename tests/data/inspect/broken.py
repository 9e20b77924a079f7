# Written for git-cutile-perf: a file the inspector must refuse.
import cuda.tile as ct

@ct.kernel
def broken(x:
    pass

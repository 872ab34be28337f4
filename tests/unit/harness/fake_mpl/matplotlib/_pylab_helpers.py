"""As matplotlib._pylab_helpers: the registry of open figures, emptied at exit."""

import atexit


class Gcf:
    figs = {}  # num -> Figure, in creation order

    @classmethod
    def destroy_all(cls):
        cls.figs.clear()


atexit.register(Gcf.destroy_all)

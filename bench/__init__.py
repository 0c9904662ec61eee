"""edgerollout's benchmark suite: scenarios run on the local lab, side by side with the native
DaemonSet controller where there is one to compare with, written to `bench/results/<name>.json`
with plots and a printed table (`./dev bench --help`)."""

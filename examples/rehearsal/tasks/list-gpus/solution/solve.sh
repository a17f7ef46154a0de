#!/bin/sh
nvidia-smi -L > /root/gpus.txt

"""The journal: capture of each exchange, distillation, the daily files' index, forget and compact."""

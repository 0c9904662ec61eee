-- Argo CD health of an apps/DaemonSet, from edgerollout's condition when it carries one.
--
-- A DaemonSet opted into edgerollout carries the condition edgerollout.io/Progressing; its reason
-- names the rollout's phase and its message ends with " (generation G)", the generation the
-- controller judged. Without that condition this is Argo CD's built-in check, restated
-- (gitops-engine pkg/health/health_daemonset.go, getAppsv1DaemonSetHealth).
-- Needs resource.customizations.useOpenLibs.apps_DaemonSet: "true" (string.match).
local CONDITION = "edgerollout.io/Progressing"

local PHASES = {
  Complete = "Healthy",
  WaitingForOfflineNodes = "Healthy",
  Rolling = "Progressing",
  Held = "Suspended",
  MaintenanceWindowClosed = "Suspended",
  Paused = "Suspended",
  RolloutFailed = "Degraded",
  ProgressDeadlineExceeded = "Degraded",
  InvalidAnnotation = "Degraded",
}

local function builtin(ds)
  local status = ds.status or {}
  local generation = ds.metadata.generation or 0
  local desired = status.desiredNumberScheduled or 0
  local updated = status.updatedNumberScheduled or 0
  local available = status.numberAvailable or 0
  if generation > (status.observedGeneration or 0) then
    return {
      status = "Progressing",
      message = "Waiting for rollout to finish: observed daemon set generation less than desired generation",
    }
  end
  local strategy = (ds.spec.updateStrategy or {}).type
  if strategy == "OnDelete" then
    return {
      status = "Healthy",
      message = string.format("daemon set %d out of %d new pods have been updated", updated, desired),
    }
  end
  if updated < desired then
    return {
      status = "Progressing",
      message = string.format(
        "Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...",
        ds.metadata.name, updated, desired),
    }
  end
  if available < desired then
    return {
      status = "Progressing",
      message = string.format(
        "Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...",
        ds.metadata.name, available, desired),
    }
  end
  return { status = "Healthy" }
end

local function edgerollout_condition(ds)
  if ds.status == nil or ds.status.conditions == nil then
    return nil
  end
  for _, condition in ipairs(ds.status.conditions) do
    if condition.type == CONDITION then
      return condition
    end
  end
  return nil
end

local function health(ds)
  local condition = edgerollout_condition(ds)
  if condition == nil then
    return builtin(ds)
  end
  local generation = ds.metadata.generation or 0
  if (ds.status.observedGeneration or 0) ~= generation then
    return {
      status = "Progressing",
      message = "Waiting for rollout to finish: observed daemon set generation less than desired generation",
    }
  end
  local message = condition.message or ""
  local suffix = string.match(message, " %(generation (%d+)%)$")
  local judged = suffix and tonumber(suffix)
  if judged ~= generation then
    return {
      status = "Progressing",
      message = string.format(
        "Waiting for edgerollout to judge generation %d (its condition is for %s)",
        generation, judged and tostring(judged) or "no generation"),
    }
  end
  local phase = PHASES[condition.reason]
  if phase == nil then
    return {
      status = "Unknown",
      message = string.format("unknown edgerollout phase %s: %s", tostring(condition.reason), message),
    }
  end
  return { status = phase, message = condition.reason .. ": " .. message }
end

return health(obj)
